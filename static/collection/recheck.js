/*
 * A page that checks again by itself (waiting for work, asked to slow down, briefly unavailable).
 *
 * Without this script a <noscript> meta refresh reloads the page after its delay. With it, the page
 * goes to its address after the same delay, and a "Stop checking by itself" button turns that off
 * (WCAG 2.2.1, Timing Adjustable: a change on a timer that the reader can stop), saying so in a live
 * region. The page's element with data-recheck-after (seconds) and data-recheck-url says when and where.
 */
(function () {
  "use strict";

  var recheck = document.querySelector("[data-recheck-after]");
  if (!recheck) {
    return;
  }
  var seconds = Number(recheck.getAttribute("data-recheck-after"));
  var url = recheck.getAttribute("data-recheck-url") || window.location.href;
  var stop = document.getElementById("recheck-stop");
  var status = document.getElementById("recheck-status");
  if (!(seconds > 0)) {
    return;
  }
  var timer = window.setTimeout(function () {
    window.location.replace(url);
  }, seconds * 1000);
  if (stop) {
    stop.hidden = false;
    stop.addEventListener("click", function () {
      window.clearTimeout(timer);
      stop.hidden = true;
      if (status) {
        status.textContent = recheck.getAttribute("data-stopped") || "";
      }
    });
  }
})();
