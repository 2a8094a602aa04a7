/*
 * The instrument card page while a large card is computed in the background (metrics/card_views.py).
 *
 * Every few seconds (data-recheck-after of templates/_recheck.html) the script asks the page again: while
 * the card is still being computed, it moves the <progress> and its text to the step reached; once the
 * card is ready, it puts the card in place of the progress, without a reload. A "Stop checking by itself"
 * button turns the asking off (WCAG 2.2.2), as static/collection/recheck.js does on the pages that check
 * again. Without JavaScript a <noscript> meta refresh reloads the page instead.
 */
(function () {
  "use strict";

  var RETRY_MS = 10000;  // after a failed request: the server may be restarting

  var panel = document.getElementById("card-computing");
  var recheck = document.querySelector("[data-recheck-after]");
  if (!panel || !recheck) {
    return;
  }
  var period = 1000 * (Number(recheck.getAttribute("data-recheck-after")) || 2);
  var url = recheck.getAttribute("data-recheck-url") || window.location.href;
  var stop = document.getElementById("recheck-stop");
  var status = document.getElementById("recheck-status");
  var timer = null;
  var stopped = false;

  function schedule(delay) {
    if (!stopped) {
      timer = window.setTimeout(check, delay);
    }
  }

  function end(message) {
    stopped = true;
    window.clearTimeout(timer);
    if (stop) {
      stop.hidden = true;
    }
    if (status) {
      status.textContent = message || "";
    }
  }

  // The step reached, from the page asked again: the bar's value and max, and the text read out.
  function update(fresh) {
    var bar = panel.querySelector("progress");
    var freshBar = fresh.querySelector("progress");
    if (bar && freshBar) {
      bar.max = Number(freshBar.getAttribute("max"));
      if (freshBar.hasAttribute("value")) {
        bar.value = Number(freshBar.getAttribute("value"));
      } else {
        bar.removeAttribute("value");
      }
      bar.textContent = freshBar.textContent;
    }
    var text = panel.querySelector("[role=status]");
    var freshText = fresh.querySelector("[role=status]");
    if (text && freshText && text.textContent !== freshText.textContent) {
      text.textContent = freshText.textContent;
    }
  }

  function check() {
    fetch(url, { credentials: "same-origin", cache: "no-store", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (response.status >= 400 && response.status < 500) {
          end("");  // the study is gone or no longer public: asking again would not change that
          return null;
        }
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        if (stopped || html === null) {
          return;
        }
        var page = new DOMParser().parseFromString(html, "text/html");
        var fresh = page.getElementById("card-computing");
        if (fresh) {
          update(fresh);
          schedule(period);
          return;
        }
        var card = page.querySelector("article.instrument-card");
        var current = document.querySelector("article.instrument-card");
        if (!card || !current) {
          schedule(RETRY_MS);
          return;
        }
        current.replaceWith(document.importNode(card, true));
        end(panel.getAttribute("data-ready"));
      })
      .catch(function () {
        schedule(RETRY_MS);
      });
  }

  if (stop) {
    stop.hidden = false;
    stop.addEventListener("click", function () {
      end(recheck.getAttribute("data-stopped"));
    });
  }
  schedule(period);
})();
