// Figures at full size: a chapter's figure (an image in a cell output) is drawn for a wide page and shown
// shrunk to the text column; clicking it (or Enter on it) opens it at its natural size, one image pixel
// per CSS pixel, in a view over the page that scrolls; a click or Escape closes it.
// Checked by the browser test (tests/browser_check.py: the first figure of every page opens and closes).
document.addEventListener("DOMContentLoaded", () => {
  const figures = document.querySelectorAll(".cell_output img");
  if (!figures.length) return;
  const view = document.createElement("div");
  view.className = "figure-zoom";
  view.hidden = true;
  view.tabIndex = -1;
  view.setAttribute("role", "dialog");
  view.setAttribute("aria-modal", "true");
  view.setAttribute("aria-label", "Figure at full size (click or Escape to close)");
  document.body.append(view);
  let opener = null;
  const close = () => {
    view.hidden = true;
    view.replaceChildren();
    document.body.classList.remove("figure-zoom-open");
    if (opener) opener.focus();
  };
  const open = (img) => {
    opener = img;
    const big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    view.replaceChildren(big);
    view.hidden = false;
    document.body.classList.add("figure-zoom-open");
    view.focus();
  };
  view.addEventListener("click", close);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !view.hidden) close();
  });
  figures.forEach((img) => {
    img.classList.add("zoomable");
    img.tabIndex = 0;
    img.title = "Click to see the figure at full size";
    img.addEventListener("click", () => open(img));
    img.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        open(img);
      }
    });
  });
});
