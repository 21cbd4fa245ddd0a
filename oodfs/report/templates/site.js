// oodfs report: sortable tables and the model-selection switch (no library, no network).
(function () {
  "use strict";

  function sortKey(cell) {
    if (!cell) return { num: null, text: "" };
    var v = cell.getAttribute("data-sort");
    var num = v === null || v === "" ? null : parseFloat(v);
    return { num: num !== null && isFinite(num) ? num : null, text: cell.textContent.trim() };
  }

  function compare(a, b) {
    // empty cells last whatever the direction is handled by the caller
    if (a.num !== null && b.num !== null) return a.num - b.num;
    if (a.num !== null) return -1;
    if (b.num !== null) return 1;
    return a.text.localeCompare(b.text, undefined, { numeric: true });
  }

  function sortBy(th) {
    var table = th.closest("table");
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
      return { row: row, key: sortKey(row.cells[index]), i: i };
    });
    rows.sort(function (a, b) {
      var ea = a.key.num === null && a.key.text === "", eb = b.key.num === null && b.key.text === "";
      if (ea !== eb) return ea ? 1 : -1;
      var c = compare(a.key, b.key);
      return (ascending ? c : -c) || a.i - b.i;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
  }

  function showRule(name) {
    document.querySelectorAll("[data-rule-view]").forEach(function (el) {
      el.hidden = el.getAttribute("data-rule-view") !== name;
    });
    document.querySelectorAll("input[name=rule]").forEach(function (input) { input.checked = input.value === name; });
    document.documentElement.setAttribute("data-rule", name);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button.sort");
    if (button) sortBy(button.closest("th"));
  });
  document.addEventListener("change", function (event) {
    if (event.target.name === "rule") {
      showRule(event.target.value);
      if (history.replaceState) history.replaceState(null, "", "#rule=" + event.target.value);
    }
  });
  function fromHash() {  // a link can name the rule: index.html#rule=oracle
    var match = /rule=([\w-]+)/.exec(location.hash);
    if (match && document.querySelector("input[name=rule][value='" + match[1] + "']")) showRule(match[1]);
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
