// harness explore: keyboard shortcuts only; every page works without this script (each step is a link).
"use strict";
document.addEventListener("keydown", function (event) {
  if (event.ctrlKey || event.metaKey || event.altKey || /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName)) {
    return;
  }
  var nav = document.querySelector("nav.stepper");
  if (!nav) { return; }
  function follow(id) {
    var link = document.getElementById(id);
    if (link && !link.classList.contains("disabled")) { window.location.href = link.href; }
  }
  if (nav.dataset.keys === "trace") {
    var keys = {ArrowRight: "next", j: "next", ArrowLeft: "prev", k: "prev", Home: "first", End: "last"};
    if (keys[event.key]) { event.preventDefault(); follow(keys[event.key]); }
  } else if (nav.dataset.keys === "model") {
    if (event.key === "ArrowLeft" || event.key === "Backspace") { event.preventDefault(); follow("back"); }
    else if (event.key === "s") { event.preventDefault(); document.getElementById("save").submit(); }
    else if (/^[1-9]$/.test(event.key)) {
      var choice = document.querySelectorAll("#enabled a.action")[Number(event.key) - 1];
      if (choice) { event.preventDefault(); window.location.href = choice.href; }
    }
  }
});
