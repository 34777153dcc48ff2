// The charts of servingmath.webcharts, moved without a kernel. Every step was computed and
// formatted by the package when the page was built; this script only looks the chosen step
// up, writes its readouts and moves the markers. It does no arithmetic of the course.
(function () {
  "use strict";

  function wire(figure) {
    if (figure.classList.contains("webchart-ready")) {
      return;
    }
    var steps = JSON.parse(figure.querySelector("script.webchart-steps").textContent);
    var input = figure.querySelector("input[type=range]");
    var value = figure.querySelector(".webchart-value");
    var cursor = figure.querySelector(".webchart-cursor");
    var markers = figure.querySelectorAll(".webchart-marker");
    var readouts = figure.querySelectorAll("[data-readout]");

    function show(index) {
      value.textContent = steps.values[index];
      input.setAttribute("aria-valuetext", steps.values[index]);
      cursor.setAttribute("x1", steps.cursor[index]);
      cursor.setAttribute("x2", steps.cursor[index]);
      steps.marks[index].forEach(function (mark, k) {
        markers[k].setAttribute("cx", mark[0]);
        markers[k].setAttribute("cy", mark[1]);
      });
      steps.readouts[index].forEach(function (text, k) {
        readouts[k].textContent = text;
      });
    }

    input.addEventListener("input", function () {
      show(Number(input.value));
    });
    input.disabled = false;
    figure.classList.add("webchart-ready");
    show(Number(input.value));
  }

  function wireAll() {
    document.querySelectorAll("figure.webchart").forEach(wire);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", wireAll);
  } else {
    wireAll();
  }
})();
