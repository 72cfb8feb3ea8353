/* Unforgetter console: copy buttons, select-all, and the issue form's project toggle. No dependencies. */
(function () {
  "use strict";

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // Plain-HTTP origins (a laptop demo) have no async clipboard: fall back to a hidden textarea.
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) { return; }
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) { return; }
    var text = "value" in source && source.tagName !== "PRE" ? source.value : source.textContent;
    var label = button.textContent;
    copyText(text).then(function () {
      button.textContent = "Copied";
      button.classList.add("copied");
    }, function () {
      if (source.select) { source.select(); }
      button.textContent = "Press Ctrl+C";
    }).then(function () {
      window.setTimeout(function () { button.textContent = label; button.classList.remove("copied"); }, 2000);
    });
  });

  document.querySelectorAll("[data-select-all]").forEach(function (box) {
    var name = box.getAttribute("data-select-all");
    box.addEventListener("change", function () {
      document.querySelectorAll('input[type=checkbox][name="' + name + '"]').forEach(function (item) {
        item.checked = box.checked;
      });
    });
  });

  // The review queue from the keyboard: j/k move between proposals, x selects, o or Enter opens.
  var rows = Array.prototype.slice.call(document.querySelectorAll("[data-keyboard-rows] tbody tr"));
  if (rows.length) {
    var current = -1;
    var focusRow = function (index) {
      current = Math.max(0, Math.min(rows.length - 1, index));
      rows.forEach(function (row, i) { row.classList.toggle("kbd-current", i === current); });
      var link = rows[current].querySelector("a");
      if (link) { link.focus(); }
    };
    document.addEventListener("keydown", function (event) {
      var target = event.target;
      if (event.altKey || event.ctrlKey || event.metaKey) { return; }
      if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) && target.type !== "checkbox") { return; }
      if (event.key === "j") { focusRow(current + 1); event.preventDefault(); }
      else if (event.key === "k") { focusRow(current - 1); event.preventDefault(); }
      else if (event.key === "x" && current >= 0) {
        var box = rows[current].querySelector("input[type=checkbox]");
        if (box) { box.checked = !box.checked; }
        event.preventDefault();
      } else if (event.key === "o" && current >= 0) {
        var open = rows[current].querySelector("a");
        if (open) { open.click(); }
      }
    });
  }

  var all = document.getElementById("id_all_projects");
  var choices = document.getElementById("project-choices");
  if (all && choices) {
    var sync = function () {
      choices.querySelectorAll("input").forEach(function (input) { input.disabled = all.checked; });
      choices.classList.toggle("disabled", all.checked);
    };
    all.addEventListener("change", sync);
    sync();
  }
  // Every handler above is attached: the browser tests wait for this before using shortcuts.
  document.documentElement.dataset.consoleReady = "1";
})();
