// Wide things scroll sideways, and say so: a display equation (MathJax's mjx-container, which scrolls), a
// table, a figure kept at its legible width (ntputils/book/sphinx_ext.py) or an output block that is wider
// than the column gets the class ntp-overflows (a dashed right edge, a coloured scroll bar;
// scroll_cue.css) and a line under it saying there is more to the right. Recomputed when the page's
// width changes, when a <details> opens and once MathJax has typeset. Checked by tests/browser_check.py.
(() => {
  const TARGETS = ".ntp-scroll, mjx-container[display='true'], div.math mjx-container, table, " +
    ".cell_output pre, .cell_output .output.text_html";
  const CUE = "\u2194 wider than the column: scroll sideways for the rest";
  const stops = (e) => !e || e === document.body || e.matches("article, .bd-article-container, main");
  const scrollerOf = (el) => {
    for (let e = el; !stops(e); e = e.parentElement) {
      if (/auto|scroll/.test(getComputedStyle(e).overflowX)) return e;
    }
    return null;
  };
  const cues = new Map();
  const update = () => {
    const scrollers = new Set();
    document.querySelectorAll(TARGETS).forEach((el) => {
      const s = scrollerOf(el);
      if (s) scrollers.add(s);
    });
    scrollers.forEach((s) => {
      const over = s.scrollWidth > s.clientWidth + 1;
      s.classList.toggle("ntp-overflows", over);
      let cue = cues.get(s);
      if (over && !cue) {
        cue = document.createElement("div");
        cue.className = "ntp-scroll-cue";
        cue.setAttribute("aria-hidden", "true");
        cue.textContent = CUE;
        // a flex item (div.math's mjx-container) gets its cue under the flex box
        const anchor = /flex/.test(getComputedStyle(s.parentElement).display) ? s.parentElement : s;
        anchor.after(cue);
        cues.set(s, cue);
      }
      if (cue) cue.hidden = !over;
    });
  };
  let pending = 0;
  const schedule = () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(update);
  };
  const mathjax = () => {
    const p = window.MathJax && MathJax.startup && MathJax.startup.promise;
    if (p) p.then(update);
  };
  document.addEventListener("DOMContentLoaded", () => { update(); mathjax(); });
  window.addEventListener("load", () => { update(); mathjax(); });
  window.addEventListener("resize", schedule);
  // a <details> that opens shows its tables for the first time: "toggle" does not bubble, so capture it
  document.addEventListener("toggle", schedule, true);
  window.ntpScrollCues = update;
})();
