// The charts of servingmath.webcharts, moved without a kernel. Every setting of every
// control was computed and formatted by the package when the page was built; this script
// only finds the chosen setting in the chart's tables and swaps the text and SVG in.
// It does no arithmetic of the course: the one sum below turns the controls' positions
// into a place in a table.
(function () {
  "use strict";

  function wire(figure) {
    if (figure.classList.contains("webchart-ready")) {
      return;
    }
    var data = JSON.parse(figure.querySelector("script.webchart-data").textContent);
    var controls = Array.prototype.map.call(figure.querySelectorAll("[data-control]"), function (box) {
      return {
        box: box,
        kind: box.dataset.kind,
        inputs: box.querySelectorAll("input, select"),
        output: box.querySelector("output")
      };
    });
    var readouts = figure.querySelectorAll("[data-readout]");
    var layers = figure.querySelectorAll("svg .webchart-layer");

    function position(control) {
      var input = control.kind === "buttons" ? control.box.querySelector("input:checked") : control.inputs[0];
      return input ? Number(input.value) : 0;
    }

    function place(positions, strides) {
      return positions.reduce(function (at, p, k) { return at + p * strides[k]; }, 0);
    }

    function show() {
      var positions = controls.map(position);
      var at = place(positions, data.strides) * data.size;
      readouts.forEach(function (readout, r) {
        readout.textContent = data.strings[data.readouts[at + r]];
      });
      data.layers.forEach(function (layer, k) {
        var markup = data.strings[layer.parts[place(positions, layer.strides)]];
        if (layers[k].dataset.shown !== markup) {
          layers[k].innerHTML = markup;
          layers[k].dataset.shown = markup;
        }
      });
      controls.forEach(function (control, k) {
        var text = data.texts[k][positions[k]];
        if (control.output) {
          control.output.textContent = text;
        }
        if (control.kind === "slider") {
          control.inputs[0].setAttribute("aria-valuetext", text);
        }
      });
    }

    controls.forEach(function (control) {
      control.inputs.forEach(function (input) {
        input.addEventListener("input", show);
        input.addEventListener("change", show);
        input.disabled = false;
      });
    });
    // A mark with a note (a dot's row): shown under the chart on hover, focus or tap.
    var detail = figure.querySelector("[data-detail]");
    if (detail) {
      ["mouseover", "focusin", "click"].forEach(function (kind) {
        figure.addEventListener(kind, function (event) {
          var mark = event.target.closest ? event.target.closest("[data-note]") : null;
          if (mark) {
            detail.textContent = mark.getAttribute("data-note");
          }
        });
      });
    }
    figure.classList.add("webchart-ready");
    show();
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
