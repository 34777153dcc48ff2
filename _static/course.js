// A table wider than its column (on a phone, most with several columns) scrolls sideways in the theme's box; this
// marks that box so the page says so (_static/course.css): "course-scrolls" while it scrolls, "course-at-end" once
// the reader has reached its right-hand end. Measured again whenever the window changes size.
(() => {
  const boxes = () => document.querySelectorAll("article .pst-scrollable-table-container");
  const atEnd = (frame, box) => frame.classList.toggle("course-at-end", box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
  const mark = () => {
    for (const box of boxes()) {
      let frame = box.parentElement;
      if (!frame.classList.contains("course-table")) {
        frame = document.createElement("div");
        frame.className = "course-table";
        box.before(frame);
        frame.append(box);
        box.addEventListener("scroll", () => atEnd(frame, box), {passive: true});
      }
      frame.classList.toggle("course-scrolls", box.scrollWidth > box.clientWidth + 1);
      atEnd(frame, box);
    }
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mark);
  else mark();
  window.addEventListener("load", mark);
  window.addEventListener("resize", mark);
})();
