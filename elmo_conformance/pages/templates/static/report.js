// Filters of a report page (by outcome and by spec chapter) and "open every failure". The page
// works without this script: every cell's details is a <details> element.
(function () {
  "use strict";
  for (const table of document.querySelectorAll("table.filterable")) {
    const form = document.getElementById(table.dataset.filters);
    if (!form) continue;
    const boxes = Array.from(form.querySelectorAll("input[name=kind]"));
    const chapter = form.querySelector("select[name=chapter]");
    const shown = form.querySelector(".shown");
    const rows = Array.from(table.tBodies[0].rows);
    const apply = function () {
      const kinds = new Set(boxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; }));
      const wanted = chapter ? chapter.value : "";
      let count = 0;
      for (const row of rows) {
        const kindOk = row.dataset.kinds.split(" ").some(function (k) { return kinds.has(k); });
        const chapterOk = !wanted || row.dataset.chapters.split(" ").indexOf(wanted) >= 0;
        row.hidden = !(kindOk && chapterOk);
        if (!row.hidden) count += 1;
      }
      if (shown) shown.textContent = count + " of " + rows.length + " rows shown";
    };
    form.addEventListener("change", apply);
    const only = form.querySelector("button[data-action=failures]");
    if (only) {
      only.addEventListener("click", function () {
        for (const b of boxes) b.checked = b.value === "FAIL" || b.value === "XPASS";
        apply();
      });
    }
    const all = form.querySelector("button[data-action=all]");
    if (all) {
      all.addEventListener("click", function () {
        for (const b of boxes) b.checked = true;
        if (chapter) chapter.value = "";
        apply();
      });
    }
    const open = form.querySelector("button[data-action=open]");
    if (open) {
      open.addEventListener("click", function () {
        const cells = table.querySelectorAll("td.k-FAIL details, td.k-XPASS details");
        const opening = Array.from(cells).some(function (d) { return !d.open; });
        for (const d of cells) d.open = opening;
      });
    }
    apply();
    // A link to PAGE.html#failures shows the failing rows with the shortest failure open.
    if (window.location.hash === "#failures" && only) {
      only.click();
      const failing = Array.from(table.querySelectorAll("td.k-FAIL details, td.k-XPASS details"));
      const cases = function (d) { return d.querySelectorAll(".case").length; };
      failing.sort(function (a, b) { return cases(a) - cases(b); });
      if (failing.length) failing[0].open = true;
    }
  }
})();
