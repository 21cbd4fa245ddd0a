"""The figures as a reader sees them (docs/PROTOCOL.md section 18): at most MAX_SERIES series a
panel, one colour and one marker per family (never shared by two families), every method named
and drawn, its identity readable without colour."""

import warnings

import pytest
from matplotlib.colors import to_hex

from oodfs.report import plots
from oodfs.report.analysis import method_family
from oodfs.report.report import Report
from tests.test_site import noisy, results

#: 20 methods of five families: seven independence-weighting methods, ten "other selectors" (two
#: of them not installed here, which count as other selectors), two Markov-boundary searches,
#: one invariance method and two yardsticks
METHODS = (
    "dwr srdo hrm kerhrm rsw svi svi_d "
    "ols lasso mi rf xgb gb stg correlation my_lasso my_forest "
    "iamb hiton_mb icp all_features mean"
).split()


def report_of(r_trains) -> Report:
    df = results(
        {m: noisy(0.3 + 0.01 * i, 0.02, i) for i, m in enumerate(METHODS)}, r_trains=r_trains, runs=range(3)
    )
    df.loc[df["method"].isin(["all_features", "mean"]), "method_kind"] = "yardstick"
    return Report(df, "val")


def drawn(monkeypatch, draw, report):
    """The figure ``draw`` makes of ``report``, as it would be saved."""
    figures = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, out_dir, stem: figures.append(fig) or [])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a figure draws without a warning (e.g. a layout that fails)
        draw(report, None)
    (fig,) = figures
    return fig


def panels(fig):
    """The panels that show data (not the legends' own), each with its labelled series."""
    out = []
    for ax in fig.axes:
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            out.append((ax, handles, labels))
    return out


def colour_of(handle) -> str:
    artist = handle[0] if isinstance(handle, tuple) or hasattr(handle, "lines") else handle
    if hasattr(handle, "lines"):  # an error-bar container: its markers' line
        artist = handle.lines[0]
    return to_hex(artist.get_color())


def assert_one_style_per_family(style_of_family: dict):
    """Each family one colour and one marker, and no two families the same colour or marker."""
    for family, styles in style_of_family.items():
        assert len(styles) == 1, (family, styles)
    colours = [next(iter(s))[0] for s in style_of_family.values()]
    markers = [next(iter(s))[1] for s in style_of_family.values()]
    assert len(set(colours)) == len(colours), style_of_family
    assert len(set(markers)) == len(markers), style_of_family


def test_figure1_with_several_r_train_has_at_most_eight_lines_a_panel_and_a_colour_per_family(monkeypatch):
    report = report_of((1.5, 2.0, 2.5))
    fig = drawn(monkeypatch, plots.figure1, report)
    families = {m: method_family(m, report.kind(m)) for m in METHODS}
    assert len(set(families.values())) == 5
    styles = plots._styles(report, METHODS)
    style_of_family: dict = {}
    seen = set()
    for ax, handles, labels in panels(fig):
        assert len(handles) <= plots.MAX_SERIES, labels
        named = sorted(t.get_text() for t in ax.texts)  # each line's name at its end
        assert named == sorted(labels)
        for line, method in zip(handles, labels):
            family = families[method]
            style_of_family.setdefault(family, set()).add((to_hex(line.get_color()), line.get_marker()))
            seen.add(method)
        # black-and-white: the lines of one family in one panel have line styles of their own
        same: dict = {}
        for method in labels:
            same.setdefault(families[method], []).append(str(styles[method]["ls"]))
        for family, looks in same.items():
            assert len(set(looks)) == len(looks), (family, looks)
    assert seen == set(METHODS)  # every method drawn
    assert_one_style_per_family(style_of_family)
    # the ten other selectors do not fit a panel: two panels of five (with the two yardsticks)
    rows = [ax.get_ylabel().replace("\n", " ") for ax in fig.axes if ax.get_ylabel()]
    assert "other selectors (1 of 2)" in rows and "other selectors (2 of 2)" in rows


def test_figure1_with_one_r_train_is_a_dot_plot_with_a_row_per_method_and_a_series_per_family(monkeypatch):
    report = report_of((2.5,))
    fig = drawn(monkeypatch, plots.figure1, report)
    families = {m: method_family(m, report.kind(m)) for m in METHODS}
    style_of_family: dict = {}
    named = 0
    for ax, handles, labels in panels(fig):
        assert len(handles) <= plots.MAX_SERIES and set(labels) == set(families.values())
        for h, family in zip(handles, labels):
            style_of_family.setdefault(family, set()).add((colour_of(h), h.lines[0].get_marker()))
        names = [t.get_text() for t in ax.get_yticklabels()]
        if not names:  # the rows are named on the first panel of each row of panels only
            continue
        named += 1
        assert sorted(names) == sorted(METHODS)  # every method named on its row
        # the names grouped by family, the families in the order of METHOD_FAMILIES
        order = [families[n] for n in names]
        assert order == sorted(order, key=lambda f: list(dict.fromkeys(order)).index(f))
        assert list(dict.fromkeys(order))[:2] == ["independence weighting", "other selectors"]
    assert named == 1  # one setting: one row of panels
    assert_one_style_per_family(style_of_family)


def test_the_rank_summary_names_methods_in_their_family_colour_and_keeps_each_panel_to_eight_series(
    monkeypatch,
):
    df = results(
        {m: noisy(0.3 + 0.01 * i, 0.02, i) for i, m in enumerate(["dwr", "srdo", "ols", "lasso", "iamb"])},
        settings=[f"s{i}" for i in range(9)],
        r_trains=(2.5,),
        runs=range(3),
    )
    report = Report(df, "val")
    fig = drawn(monkeypatch, plots.summary_figure, report)
    colour_of_family: dict = {}
    shown = set()
    for ax, handles, labels in panels(fig):
        assert len(handles) <= plots.MAX_SERIES, labels
        assert labels[-1] == "all settings"
        shown |= set(labels)
        for label in ax.get_yticklabels():
            family = method_family(label.get_text(), report.kind(label.get_text()))
            colour_of_family.setdefault(family, set()).add(to_hex(label.get_color()))
    assert shown == {f"s{i}" for i in range(9)} | {"all settings"}  # nine settings over two rows
    assert all(len(c) == 1 for c in colour_of_family.values())
    colours = [next(iter(c)) for c in colour_of_family.values()]
    assert len(colours) == len(set(colours)) == 3


def test_families_a_plugin_declares_get_colours_and_markers_of_their_own():
    built_in = list(plots.FAMILY_STYLES)
    declared = [f"family {i}" for i in range(9)]  # more than the palette holds
    styles = plots.family_styles(built_in + declared)
    colours = [c for c, _ in styles.values()]
    assert len(set(colours)) == len(colours) == 15
    assert plots.family_styles(list(reversed(declared))) == {f: styles[f] for f in declared}  # any order


@pytest.mark.parametrize("family", list(plots.FAMILY_STYLES))
def test_a_familys_names_are_dark_enough_to_read_on_white(family):
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(plots.text_colour(plots.FAMILY_STYLES[family][0]))
    assert 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.45  # relative luminance, roughly: on white, legible
