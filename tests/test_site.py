"""`oodfs report`: the static site -- what it shows, that it agrees with the other outputs, bad
input, hostile names, and (in headless Chromium) that it works from disk without the network."""

import json
import os
import re
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report
from oodfs.report.site import build_site
from oodfs.report.site_folder import MARKER
from oodfs.results.store import export
from oodfs.validation import OodfsError

HOSTILE_METHOD = "<script>document.title='pwned'</script>"
HOSTILE_SETTING = "<img src=x onerror=alert(1)>/../x"
INSTALL = "apt-get install chromium chromium-driver && pip install selenium"


def results(
    methods: dict, settings=("poly",), r_trains=(1.5, 2.5), runs=range(6), suite="t", status="ok"
) -> pd.DataFrame:
    """A results table: ``methods[name](setting, r_train, run) -> rmse``; rank average follows the
    RMSE; a method named ``*dwr*`` is a weighter with diagnostics (its weights collapsed)."""
    rows = []
    for method, fn in methods.items():
        weighter = "dwr" in method
        for setting in settings:
            for r in r_trains:
                for run in runs:
                    rmse = fn(setting, r, run)
                    base = dict(
                        suite=suite,
                        profile="default",
                        setting=setting,
                        r_train=r,
                        run=run,
                        method=method,
                        method_kind="weighter" if weighter else "selector",
                        point=0,
                        params="{}",
                        is_default=1,
                        env=None,
                        k=2,
                        scores=json.dumps([3.0, 2.0, 1.0, 1.0]),
                        feature_names=json.dumps(["S1", "S2", "V1", "V2"]),
                        status=status,
                        error=None if status == "ok" else "ValueError: boom <b>",
                    )
                    if status != "ok":
                        rows.append(dict(base, metric=None, value=None))
                        continue
                    metrics = {"rank_avg": 2 + 4 * rmse, "rmse_mean": rmse, "rmse_val": rmse}
                    if weighter:
                        metrics.update(ess_fraction=0.01, max_weight=40.0, converged=1.0)
                    rows += [dict(base, metric=m, value=v) for m, v in metrics.items()]
                    rows += [dict(base, metric="rmse", env=e, value=rmse) for e in ("-2.0", "2.0")]
    return pd.DataFrame(rows)


def noisy(mean, sd, seed):
    rng = np.random.default_rng(seed)
    table = {}
    return lambda s, r, run: table.setdefault((s, r, run), mean + sd * rng.standard_normal())


def folder(where: Path, df: pd.DataFrame) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    export(df, where)
    return where


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A site of one folder whose names are hostile: a method that is HTML, a setting that is HTML
    and a path."""
    root = tmp_path_factory.mktemp("site")
    df = results(
        {"dwr": noisy(0.30, 0.01, 0), "ols": noisy(0.50, 0.01, 1), HOSTILE_METHOD: noisy(0.31, 0.01, 2)},
        settings=("poly", HOSTILE_SETTING),
    )
    run = folder(root / "run", df)
    index = build_site([run], root / "site", answer=across_answer)
    return index


def across_answer(fig_dir):
    """The answer across suites a page shows after its verdicts (benchmarks/selection_vs_shift's
    page_answer makes the real one), here from a small result of known outcome."""
    from oodfs.report import across_shift
    from tests.test_across_shift import answer_result

    res = answer_result(related=False)
    paths = across_shift.figure(res, fig_dir)
    diagnoses = [dict(suite="s0", kind="mostly X", y_share=0.1, x_shift=0.2, y_shift=0.02, overlap=0.5)]
    return dict(paragraph=across_shift.paragraph(res), figure=paths[-1], diagnoses=diagnoses,
                report="benchmarks/selection_vs_shift/README.md")  # fmt: skip


# -- what the page says ------------------------------------------------------------------------


def test_the_site_has_every_part_and_figures_in_three_formats(site):
    html = site.read_text()
    for part in (
        "Verdicts",
        "Provenance",
        "Leaderboard",
        "Best sets",
        "Weight diagnostics",
        "Selected features",
        "Statistical comparisons",
        "Friedman test across 3 methods",
        "All settings at once",
        "Figure 1",
    ):
        assert part in html, part
    for rule in ("val", "oracle", "default"):
        assert f'data-rule-view="{rule}"' in html
    figures = site.parent / "figures"
    svgs = sorted(p.name for p in figures.rglob("*.svg"))
    assert (
        "summary-val.svg" in svgs and "figure1-oracle.svg" in svgs and any(s.startswith("cd-") for s in svgs)
    )
    for svg in figures.rglob("*.svg"):  # every figure in every format, and the page shows the SVG
        assert svg.with_suffix(".png").exists() and svg.with_suffix(".pdf").exists()
    assert 'src="figures/1-run/figure1-val.svg"' in html
    # every file the page points to is there
    for ref in __import__("re").findall(r'(?:src|href)="(figures/[^"]+)"', html):
        assert (site.parent / ref).exists(), ref


def test_site_and_leaderboard_html_show_the_leaderboard_cells_of_the_markdown(site, tmp_path):
    df = results({"dwr": noisy(0.30, 0.01, 0), "ols": noisy(0.50, 0.01, 1)})
    df["origin"] = np.where(df["method"] == "ols", "reference", "run")
    board = Leaderboard(Report(df, "val"))
    page = board.to_html()
    marked = page.count("<td>dwr (suspect: ")  # the fixture's dwr collapses its weights
    assert '<td class="ref" title=' in page and page.count('class="ref"') == marked > 0
    assert "Rows of ols come from the reference results" in page
    md = board.to_markdown()
    best = next(line for line in md.splitlines() if line.startswith("| dwr")).split("|")[3].strip()
    assert best.startswith("**")  # dwr is the best rank average in the markdown...
    assert (
        f'class="num best" data-sort="{float(best.strip("*").split()[0])}">{best.strip("*")}</td>' in page
    )  # ...and the page
    assert "Weight diagnostics" in page and "effective sample size below 5 % of n" in page
    assert page.startswith("<!doctype html>") and "<script>" in page  # a page of its own, sortable
    index = build_site([folder(tmp_path / "run", df)], tmp_path / "site", selection="val", formats=["svg"])
    assert best.strip("*") in index.read_text()


def test_several_folders_side_by_side(tmp_path):
    a = folder(
        tmp_path / "a" / "run",
        results({"dwr": noisy(0.3, 0.01, 0), "ols": noisy(0.5, 0.01, 1)}, runs=range(1)),
    )
    b = folder(
        tmp_path / "b" / "run",
        results({"dwr": noisy(0.4, 0.01, 3), "new": noisy(0.2, 0.01, 4)}, runs=range(1)),
    )
    html = build_site([a, b], tmp_path / "site", formats=["svg"]).read_text()
    start = html.index('<section id="side-by-side">')
    side = html[start : html.index("</section>", start)]
    # one column group per folder, labelled by as much of its path as makes the labels distinct
    assert 'colspan="2">a/run</th>' in side and 'colspan="2">b/run</th>' in side
    assert "<td>ols</td>" in side and "<td>new</td>" in side  # every method of either folder
    assert not list((tmp_path / "site").rglob("*.png"))  # --formats svg keeps the SVGs only


def test_rules_that_need_several_environments_are_left_off_a_one_environment_page(site):
    html = site.read_text()
    switch = html[html.index('<form class="rules"') : html.index("</form>")]
    assert 'value="val"' in switch and 'value="oracle"' in switch
    assert 'value="train-domain"' not in switch and 'value="loeo"' not in switch
    assert "Not on the switch: <b>train-domain</b> (the `train-domain` rule needs" in html


def test_the_page_shows_the_metrics_asked_for(tmp_path):
    run = folder(tmp_path / "run", results({"dwr": noisy(0.3, 0.01, 0), "ols": noisy(0.5, 0.01, 1)}))
    html = build_site([run], tmp_path / "site", formats=["svg"], columns=["rmse_val"]).read_text()
    headers = re.findall(r"<th[^>]*>(.*?)</th>", html, flags=re.S)
    assert any("validation RMSE" in h for h in headers)
    assert not any("rank avg" in h or "RMSE mean" in h for h in headers)
    with pytest.raises(OodfsError, match="'f1' has no values to compare"):
        build_site([run], tmp_path / "site2", formats=["svg"], columns=["f1"])


def test_a_folder_with_only_failures_gives_a_page_that_says_what_failed(tmp_path, capsys):
    run = folder(tmp_path / "run", results({"bad": noisy(0.3, 0.01, 0)}, status="failed"))
    assert main(["report", str(run), "--out", str(tmp_path / "site")]) == 0
    html = (tmp_path / "site" / "index.html").read_text()
    assert "no task succeeded" in html and "ValueError: boom &lt;b&gt;" in html and "Failed tasks" in html


@pytest.mark.parametrize("case", ["missing", "not results", "empty", "out is a folder of other files"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, case):
    good = folder(tmp_path / "good", results({"a": noisy(0.3, 0.01, 0)}, r_trains=(2.5,), runs=range(2)))
    out = tmp_path / "site"
    if case == "missing":
        args = [str(tmp_path / "nope")]
    elif case == "not results":
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "notes.txt").write_text("hi")
        args = [str(tmp_path / "other")]
    elif case == "empty":
        (tmp_path / "empty").mkdir()
        args = [str(tmp_path / "empty")]
    else:
        out.mkdir()
        (out / "thesis.tex").write_text("keep me")
        args = [str(good)]
    assert main(["report", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("oodfs: error:"), err
    if case == "out is a folder of other files":
        assert (out / "thesis.tex").read_text() == "keep me"


def test_a_site_is_replaced_whole_and_so_is_one_an_older_oodfs_wrote(tmp_path):
    # (a site holding a file it did not write is refused: tests/test_data_loss.py)
    run = folder(
        tmp_path / "run",
        results({"a": noisy(0.3, 0.01, 0), "b": noisy(0.4, 0.01, 1)}, r_trains=(2.5,), runs=range(1)),
    )
    out = tmp_path / "site"
    build_site([run], out, formats=["svg", "png"])
    (out / "index.html").write_text("old page")
    build_site([run], out, formats=["svg"])
    assert (out / "index.html").read_text() != "old page"
    assert not list(out.rglob("*.png"))  # nothing of the old site is left
    # a marker from before markers listed their files: the page and figure files are the site's
    (out / MARKER).write_text("written by `oodfs report`\n")
    build_site([run], out, formats=["svg"])
    assert '"files"' in (out / MARKER).read_text()


def test_hostile_names_are_escaped_and_never_become_paths(site):
    html = site.read_text()
    assert HOSTILE_METHOD not in html and "<img src=x" not in html
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in html
    assert html.count("<script>") == 1  # the page's own
    files = [p.relative_to(site.parent) for p in site.parent.rglob("*")]
    assert all(".." not in p.parts and "<" not in str(p) for p in files)
    assert not (site.parent.parent / "x").exists()
    # the SVG figures name the method too (a legend, a label), as escaped text: opened on their
    # own, they run nothing
    svgs = [p.read_text() for p in site.parent.rglob("*.svg")]
    assert sum("&lt;script&gt;" in t for t in svgs) >= 3
    assert not any("<script" in t or "<img src=x" in t for t in svgs)


def _section(html: str, ident: str) -> str:
    start = html.index(f'<section id="{ident}">')
    return html[start : html.index("</section>", start)]


def test_the_page_opens_with_its_tested_verdicts_in_words(site):
    html = site.read_text()
    # the verdicts come first, then the leaderboard; the reference tables after it, the
    # provenance last
    assert html.index('id="verdicts"') < html.index('id="run1"') < html.index('id="overview"')
    assert html.index('id="run1-val-leaderboard"') < html.index('id="methods"') < html.index('id="overview"')
    verdicts = _section(html, "verdicts")
    val = verdicts[verdicts.index('data-rule-view="val"') :]
    val = val[: val.index("</div>")]
    # the family, its unit and correction, and the downstream model, as the analysis states them
    assert "paired Wilcoxon over 12 (r_train, run) blocks, Holm over 3 pairs" in val
    assert "downstream model mlp" in val
    # ols (RMSE 0.50 against 0.30) is beaten by dwr in every block: a tested verdict, in words
    poly = val[val.index("<code>poly</code>: rank avg ↓:") :]
    assert re.match(
        r"<code>poly</code>: rank avg ↓: (dwr( and \S+)? (is|are) significantly better|best: dwr)", poly
    )
    assert "cannot be tested" not in val


def test_the_reference_tables_come_after_the_leaderboard_collapsed(site):
    """The measured sizes (more than a screen with every method) follow the results, closed
    until a reader opens them; the links at the top follow the page's order."""
    html = site.read_text()
    scale = _section(html, "scale")
    assert "How large a table each method was measured on" in scale and "dwr" in scale
    assert re.search(
        r'^<details class="reference">\s*<summary><h2>How large a table', scale.split("\n", 1)[1]
    )
    assert '<details class="reference" open' not in scale
    leaderboard = html.index('id="run1-val-leaderboard"')
    assert leaderboard < html.index('<section id="methods">') < html.index('<section id="scale">')
    assert leaderboard < html.index('<section id="about">')
    nav = html[html.index('<nav class="toc">') : html.index("</nav>")]
    links = re.findall(r'href="#([^"]+)"', nav)
    assert links == ["verdicts", "across-shift", "run1", "methods", "scale", "overview"]
    assert links == sorted(links, key=lambda a: html.index(f'id="{a}"'))


def test_the_page_links_the_user_guide_where_its_documented_build_puts_it(site):
    """The page says how to read it: a link to the guide's "Results" page, relative from the page
    to where CONTRIBUTING.md's docs build writes it in this repository, and the build command."""
    from oodfs.report.site import GUIDE_BUILT, GUIDE_COMMAND

    root = Path(__file__).resolve().parents[1]
    html = site.read_text()
    (href,) = set(re.findall(r'<a href="([^"]*guide/results\.html)">', html))
    assert (site.parent / href).resolve() == root / GUIDE_BUILT
    assert GUIDE_COMMAND in html and "docs/guide/results.md" in html
    assert GUIDE_COMMAND in (root / "CONTRIBUTING.md").read_text()
    assert (root / "docs" / "guide" / "results.md").is_file()
    assert GUIDE_BUILT.parts[:3] == tuple(GUIDE_COMMAND.split()[-1].split("/"))  # the command's output


def test_a_run_that_cannot_be_tested_says_so_and_lists_no_undecidable_pairs(tmp_path):
    run = folder(
        tmp_path / "run",
        results(
            {"dwr": noisy(0.3, 0.01, 0), "ols": noisy(0.5, 0.01, 1), "mi": noisy(0.4, 0.01, 2)}, runs=range(1)
        ),
    )
    html = build_site([run], tmp_path / "site", formats=["svg"]).read_text()
    verdicts = _section(html, "verdicts")
    assert "This run cannot be tested" in verdicts and "With at most 2 units per comparison" in verdicts
    comparisons = html[html.index("Statistical comparisons") :]
    assert "No pair can be decided with these units" in comparisons
    assert (
        "<td>not distinguishable</td>" not in comparisons
        and "<td>too few pairs to decide</td>" not in comparisons
    )


def test_one_unit_reads_as_one_unit():
    df = results({"dwr": noisy(0.3, 0.01, 0), "ols": noisy(0.5, 0.01, 1)}, r_trains=(2.5,), runs=range(1))
    from oodfs.report.analysis import Analysis

    note = Analysis(Report(df, "val")).undecidable_note()
    assert note.startswith("With 1 unit per comparison") and "at most 1 units" not in note


def test_every_diagnostic_and_column_says_what_value_is_good(site):
    html = site.read_text()
    weights = html[html.index("Weight diagnostics</h3>") :]
    weights = weights[: weights.index("</dl>")]
    for title in ("ESS / n", "max weight"):
        assert f"<dt>{title}</dt>" in weights, title
    assert weights.count("What value is good:") == weights.count("<dt>") >= 2
    assert "1 = uniform weights" in weights and "suspect below 0.05" in weights
    columns = html[html.index("What the columns mean") :]
    columns = columns[: columns.index("</dl>")]
    assert "<dt>rank avg ↓</dt>" in columns and "not the methods&#39; rank among each other" in columns
    # the ranking of methods is never called by the metric's name
    assert "Average method rank among the methods (1 = best; not the rank-avg metric)" in html
    assert "All settings at once: method rank" in html


def test_methods_are_grouped_by_what_they_need(tmp_path):
    df = results(
        {"dwr": noisy(0.3, 0.01, 0), "icp": noisy(0.4, 0.01, 1), "drig": noisy(0.45, 0.01, 2)}, runs=range(2)
    )
    html = build_site([folder(tmp_path / "run", df)], tmp_path / "site", formats=["svg"]).read_text()
    needs = _section(html, "methods")
    rows = re.findall(r'<tr><th scope="row">(.*?)<br>.*?</th>\s*<td>(.*?)</td></tr>', needs, flags=re.S)
    got = {need: re.sub(r"<[^>]+>", "", members) for need, members in rows}
    assert set(got) == {"nothing", "environment labels", "a reference environment"}
    assert (
        "dwr" in got["nothing"]
        and "icp" in got["environment labels"]
        and "drig" in got["a reference environment"]
    )
    assert "independence weighting" in got["nothing"] and "invariance" in got["environment labels"]


def test_folders_of_several_suites_give_a_page_each_and_an_index_across_them(tmp_path):
    paths = []
    for i, suite in enumerate(("ames", "wage", "auto")):
        df = results(
            {
                "dwr": noisy(0.30, 0.01, i),
                "ols": noisy(0.40, 0.01, 10 + i),
                "all_features": noisy(0.35, 0.01, 20 + i),
            },
            suite=suite,
            r_trains=(2.5,),
            runs=range(3),
        )
        df.loc[df["method"] == "all_features", "method_kind"] = "yardstick"
        paths.append(folder(tmp_path / suite, df))
    index = build_site(paths, tmp_path / "site", formats=["svg"])
    html = index.read_text()
    across = _section(html, "across")
    # the suite as the unit: each method against all_features over the three suites
    assert "Wilcoxon signed-rank test over\nthe 3 suites" in across or "over\nthe 3 suites" in across
    assert "<td>dwr</td>" in across and "<td>ols</td>" in across
    for i, suite in enumerate(("ames", "wage", "auto")):
        page = index.parent / f"{i + 1}-{suite}" / "index.html"
        assert page.exists() and f'href="{i + 1}-{suite}/index.html"' in html
        assert f"suite <code>{suite}</code>" in page.read_text()


# -- in a browser ----------------------------------------------------------------------------


def _chromium():
    """(browser, driver) paths, or skip -- or fail under CI, where the browser tests must run."""
    browser = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )
    driver = shutil.which("chromedriver")
    try:
        import selenium  # noqa: F401
    except ImportError:
        selenium = None
    missing = [
        what
        for what, found in (("chromium", browser), ("chromedriver", driver), ("selenium", selenium))
        if not found
    ]
    if not missing:
        return browser, driver
    message = f"browser tests need {', '.join(missing)}: {INSTALL}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = _chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    profile = tempfile.mkdtemp(prefix="oodfs-chromium-")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--window-size=1300,900",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def _open(driver, page: Path):
    driver.get(page.resolve().as_uri())
    driver.execute_script("window.scrollTo(0, document.body.scrollHeight)")  # lazy images load too
    urls = []
    deadline = time.monotonic() + 15
    while True:  # lazy images load asynchronously after the scroll: collect requests until one came
        requests = [json.loads(e["message"])["message"] for e in driver.get_log("performance")]
        urls += [
            m["params"]["request"]["url"]
            for m in requests
            if m["method"] == "Network.requestWillBeSent"
            and m["params"].get("documentURL", "").startswith("file:")
        ]
        if any(u.endswith(".svg") for u in urls) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    driver.execute_script("window.scrollTo(0, 0)")
    return urls, driver.get_log("browser")


def test_the_request_check_catches_a_page_that_leaks(browser, tmp_path):
    leaky = tmp_path / "leaky.html"
    leaky.write_text(
        '<!doctype html><img src="http://127.0.0.1:9/x.png"><script>console.error("bad")</script>'
    )
    urls, logs = _open(browser, leaky)
    assert any(u.startswith("http:") for u in urls) and any(e["level"] == "SEVERE" for e in logs)


def test_the_page_loads_from_disk_with_no_error_and_no_request_leaving_it(browser, site):
    urls, logs = _open(browser, site)
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == []
    assert urls and all(u.split(":", 1)[0] in ("file", "data") for u in urls), urls
    assert any(u.endswith(".svg") for u in urls)  # the figures are loaded from beside the page
    assert browser.title.startswith("oodfs report")
    broken = browser.execute_script(
        "return Array.from(document.images)"
        ".filter(i => i.offsetParent && i.complete && !i.naturalWidth).length"
    )
    assert broken == 0
    assert browser.execute_script("return document.title") != "pwned"


def test_a_click_on_a_header_sorts_the_rows(browser, site):
    from selenium.webdriver.common.by import By

    browser.get(site.resolve().as_uri())
    table = next(t for t in browser.find_elements(By.CSS_SELECTOR, "table.board") if t.is_displayed())
    headers = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    col = next(i for i, h in enumerate(headers) if h.startswith("RMSE mean"))

    def column():
        return [
            (
                r.find_elements(By.TAG_NAME, "td")[0].text,
                float(r.find_elements(By.TAG_NAME, "td")[col].get_attribute("data-sort")),
            )
            for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")
        ]

    before = column()
    button = table.find_elements(By.CSS_SELECTOR, "thead th button")[col]
    button.click()
    ascending = column()
    assert [v for _, v in ascending] == sorted(v for _, v in before)
    assert ascending[0][0].split(" (")[0] == "dwr"  # the lowest RMSE first (marked suspect here)
    button.click()
    assert [v for _, v in column()] == sorted((v for _, v in before), reverse=True)
    assert table.find_elements(By.CSS_SELECTOR, "thead th")[col].get_attribute("aria-sort") == "descending"


def test_the_rule_switch_shows_one_rule_at_a_time(browser, site):
    from selenium.webdriver.common.by import By

    browser.get(site.resolve().as_uri())

    def shown():
        return {
            el.get_attribute("data-rule-view")
            for el in browser.find_elements(By.CSS_SELECTOR, "[data-rule-view]")
            if el.is_displayed()
        }

    assert shown() == {"val"}
    browser.find_element(By.CSS_SELECTOR, "input[name=rule][value=oracle]").click()
    assert shown() == {"oracle"}
    assert browser.find_element(By.CSS_SELECTOR, "[data-rule-view=oracle] img").is_displayed()
    browser.get(site.resolve().as_uri() + "#rule=default")  # a link can name the rule
    assert shown() == {"default"}


def test_the_leaderboard_is_on_the_first_screen_and_the_sizes_open_on_a_click(browser, site):
    from selenium.webdriver.common.by import By

    browser.get(site.resolve().as_uri())
    where = """
        const top = s => document.querySelector(s).getBoundingClientRect().top + window.scrollY;
        return {board: top('[id="run1-val-leaderboard"]'), methods: top('#methods'), scale: top('#scale'),
                screen: window.innerHeight, shown: document.querySelector('#scale table').checkVisibility(),
                height: document.querySelector('#scale').getBoundingClientRect().height};
        """
    found = browser.execute_script(where)
    assert found["board"] < found["screen"] < found["methods"] < found["scale"], found
    assert not found["shown"] and found["height"] < 120, found  # collapsed: a heading's room
    browser.find_element(By.CSS_SELECTOR, "#scale summary").click()
    opened = browser.execute_script(where)
    assert opened["shown"] and opened["height"] > found["height"] + 100, opened


def test_a_screenshot_is_not_blank(browser, site, tmp_path):
    from PIL import Image

    browser.get(site.resolve().as_uri())
    shot = tmp_path / "shot.png"
    assert browser.save_screenshot(str(shot))
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape[0] > 500 and pixels.shape[1] > 800
    assert (pixels < 128).mean() > 0.01 and pixels.std() > 20  # text and tables, not an empty page


def test_the_widest_table_scrolls_inside_its_box_and_its_last_column_can_be_reached(browser, tmp_path):
    folders = [
        folder(
            tmp_path / name / "run",
            results(
                {"dwr": noisy(0.3, 0.01, i), "ols": noisy(0.5, 0.01, 9 + i)}, r_trains=(2.5,), runs=range(2)
            ),
        )
        for i, name in enumerate("abcd")
    ]
    index = build_site(
        folders, tmp_path / "site", formats=["svg"], columns=["rank_avg", "rmse_mean", "rmse_val"]
    )
    browser.get(index.resolve().as_uri())
    found = browser.execute_script(
        """
        const tables = [...document.querySelectorAll('table')].filter(t => t.offsetParent);
        const t = tables.sort((a, b) => b.scrollWidth - a.scrollWidth)[0];
        const box = t.closest('.scroll');
        const before = t.querySelector('thead tr:last-child th:last-child').getBoundingClientRect();
        box.scrollLeft = box.scrollWidth;
        const after = t.querySelector('thead tr:last-child th:last-child').getBoundingClientRect();
        return {table: t.scrollWidth, window: document.documentElement.clientWidth,
                page: document.documentElement.scrollWidth, box: box.clientWidth,
                overflow: getComputedStyle(box).overflowX, before: before.right, left: after.left,
                right: after.right};
        """
    )
    assert found["table"] > found["window"], found  # wider than the window...
    assert found["overflow"] == "auto" and found["box"] <= found["window"]  # ...it scrolls in its box
    assert found["page"] <= found["window"]  # the page itself is not cut off or widened
    assert found["before"] > found["window"]  # its last column starts out of sight
    assert 0 <= found["left"] and found["right"] <= found["window"]  # and is reached by scrolling


def test_a_real_suites_page_shows_its_shift_diagnosis(tmp_path):
    from oodfs.shift import diagnose_suite, drop_kind

    assert diagnose_suite("synthetic") is None  # a shift known by design is not diagnosed
    d = dict(p=0.0436, q=0.0621, x_shift=-0.0112, y_shift=0.0297, overlap=0.59, drop=0.0185, y_share=1.6)
    assert drop_kind(d) == "mostly Y∣X" and drop_kind(dict(d, overlap=0.05)).startswith("unclear")
    run = folder(
        tmp_path / "run", results({"dwr": noisy(0.3, 0.01, 0), "ols": noisy(0.5, 0.01, 1)}, runs=range(2))
    )
    asked = []
    html = build_site(
        [run],
        tmp_path / "site",
        formats=["svg"],
        diagnose=lambda s: asked.append(s) or dict(d, kind=drop_kind(d)),
    ).read_text()
    assert asked == ["t"]
    shift = _section(html, "shift")
    assert "The drop is <b>mostly Y∣X</b>" in shift and "+0.0297 from the change in Y ∣ X" in shift
    assert "(160 % of the drop)" in shift and "overlap 0.59" in shift


def test_the_verdict_across_suites_groups_methods_as_the_pages_do(tmp_path):
    """One family per method in every output: HRM (an independence-package selector) is counted
    with DWR, IAMB with the Markov-boundary methods, as the page's method table and figures group
    them; the family test sets independence weighting against the other selectors even when a
    third family is present."""
    paths = []
    for i, suite in enumerate(("ames", "wage", "auto")):
        methods = {"dwr": 0.30, "hrm": 0.31, "iamb": 0.33, "ols": 0.40, "all_features": 0.35}
        df = results(
            {m: noisy(v, 0.01, 10 * j + i) for j, (m, v) in enumerate(methods.items())},
            suite=suite,
            r_trains=(2.5,),
            runs=range(3),
        )
        df.loc[df["method"] == "all_features", "method_kind"] = "yardstick"
        paths.append(folder(tmp_path / suite, df))
    across = re.sub(
        r"\s+", " ", _section(build_site(paths, tmp_path / "site", formats=["svg"]).read_text(), "across")
    )
    for method, family in [("dwr", "independence weighting"), ("hrm", "independence weighting"),
                           ("iamb", "Markov boundary"), ("ols", "other selectors")]:  # fmt: skip
        assert f"<td>{method}</td><td>{family}</td>" in across, method
    assert "Families: other selectors against independence weighting" in across


def test_figures_draw_very_long_names_cut_and_apart(tmp_path):
    """A 20 000-character method name and a 5 000-character setting: figures draw them cut to
    MAX_LABEL characters with a hash of the whole (uncut, matplotlib's layout took about 2 GB),
    and two long names with one start stay apart (#50)."""
    from oodfs.report.escape import MAX_LABEL, mpl_text
    from oodfs.report.plots import make_figures

    a, b = "m" * 20000, "m" * 19999 + "n"
    assert len(mpl_text(a)) == MAX_LABEL and mpl_text(a) != mpl_text(b)
    assert mpl_text("poly: RMSE mean ↓") == "poly: RMSE mean ↓"  # ordinary labels are untouched
    df = results({"dwr": noisy(0.3, 0.01, 0), a: noisy(0.5, 0.01, 1)}, settings=("s" * 5000,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # matplotlib cannot fit a 120-character tick label's margin
        paths = make_figures(Report(df, "val"), tmp_path)
    assert paths and all(p.stat().st_size > 0 for p in paths)


def test_the_answer_across_suites_follows_the_verdicts_and_comes_before_the_leaderboard(site):
    import html as html_module

    from oodfs.report import across_shift
    from tests.test_across_shift import answer_result

    page = site.read_text()
    assert page.index('id="verdicts"') < page.index('id="across-shift"') < page.index('id="run1"')
    # the paragraph the analysis writes, word for word, and its figure in the site
    assert across_shift.paragraph(answer_result(related=False)) in html_module.unescape(page)
    assert 'src="figures/across-shift/selection_vs_shift.svg"' in page
    assert (site.parent / "figures" / "across-shift" / "selection_vs_shift.svg").is_file()
