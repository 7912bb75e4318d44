// A display equation wider than its column scrolls inside its own box (narrow.css). Mark
// the boxes that do, and which side hides part of the equation, so that the CSS fades that
// edge: a cue that works on any background (page, theorem box, note).
(function () {
  function mark(box) {
    const wide = box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("eq-scroll", wide);
    box.classList.toggle("eq-more-left", wide && box.scrollLeft > 1);
    box.classList.toggle("eq-more-right", wide && box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
  }
  function markAll() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (box) {
      if (!box.dataset.eqWatched) {
        box.dataset.eqWatched = "1";
        box.addEventListener("scroll", function () { mark(box); }, { passive: true });
      }
      mark(box);
    });
    document.documentElement.dataset.equationsMarked = "1";
  }
  function start() {
    const mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(markAll);
    else markAll();
  }
  window.addEventListener("load", start);
  window.addEventListener("resize", markAll);
})();
