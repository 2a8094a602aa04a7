/*
 * The voting page, enhanced: vote by click or key, and get the next comparison without a page reload.
 *
 * Without this script the page is a plain form that posts the vote and renders the next comparison.
 * With it, a vote goes to POST /api/votes/, whose answer carries the next comparison: one request per
 * judgement. When it carries none (next is null), the page reloads and the server says why. The answer
 * of an older server without "next" is followed by GET /api/studies/<slug>/next/ (204: nothing).
 * When the server is briefly unavailable (503, 502, 504, a lost connection) or asks to slow down (429),
 * the page says so and tries again by itself, after Retry-After or a growing pause: the vote is kept
 * until it is recorded. On any other API error the vote is sent with the plain form instead: the server
 * records a vote once per assignment, so sending it again is safe.
 *
 * No side may look chosen when a pair appears, which would bias the annotator towards it: after a vote
 * the focus moves from the button used to the question, and hover highlights wait until the pointer
 * moves (site.css: "pointer-resting"). When the next pair belongs to a new ballot, the page says so.
 *
 * Finish (a plain form) appears once the study's minimum of judgements is made; until then the page
 * counts down the comparisons that remain. Leaving the page (closing it, going elsewhere, reloading)
 * gives the comparison held back at once, with a beacon on pagehide (POST /s/<slug>/release/), rather
 * than when its lease lapses. A reload asks for its page before that beacon is sent, so the new page may
 * show the very comparison just given back: it then gives it back itself (the same request, which
 * changes nothing twice) and asks for the next one.
 */
(function () {
  "use strict";

  var form = document.getElementById("vote-form");
  if (!form || !window.fetch || !window.JSON) {
    return;
  }

  // The page's messages come from Django's JavaScript catalog of the page's language, loaded before this
  // script; without it (a failed load) they stay in English.
  var gettext = window.gettext || function (text) { return text; };
  var ngettext = window.ngettext || function (singular, plural, count) { return count === 1 ? singular : plural; };
  var interpolate = window.interpolate || function (format, values, named) {
    return named
      ? format.replace(/%\(\w+\)s/g, function (match) { return String(values[match.slice(2, -2)]); })
      : format.replace(/%s/g, function () { return String(values.shift()); });
  };

  var REQUEST_TIMEOUT_MS = 15000;
  var RETRY_STATUSES = { 429: true, 502: true, 503: true, 504: true };
  var MAX_RETRY_SECONDS = 30;
  // An arrow key chooses the pair shown on its side: right to left, the first pair ("left") is on the right.
  var RIGHT_TO_LEFT = document.documentElement.dir === "rtl";
  var KEYS = {
    ArrowLeft: RIGHT_TO_LEFT ? "right" : "left",
    ArrowRight: RIGHT_TO_LEFT ? "left" : "right",
    "1": "left",
    "2": "right",
    "=": "tie",
    "0": "tie"
  };

  var voteUrl = form.getAttribute("data-api-vote");
  var nextUrl = form.getAttribute("data-api-next");
  var assignmentInput = form.elements.namedItem("assignment");
  var clientMsInput = form.elements.namedItem("client_ms");
  var question = document.getElementById("question");
  var status = document.getElementById("vote-status");
  var buttons = Array.prototype.slice.call(form.querySelectorAll("button[name=choice]"));
  var retryNotice = document.getElementById("vote-retry");
  var ballotNotice = document.getElementById("ballot-notice");
  var ballot = ballotNotice.getAttribute("data-ballot");
  var instructions = document.getElementById("instructions");
  var releaseUrl = form.getAttribute("data-release");
  var finish = document.getElementById("finish");
  var RELEASED_KEY = "yardstick-released-assignment";
  var shownAt = now();
  var busy = false;

  function now() {
    return window.performance && performance.now ? performance.now() : Date.now();
  }

  function each(selector, callback) {
    Array.prototype.forEach.call(document.querySelectorAll(selector), callback);
  }

  function buttonFor(choice) {
    return document.getElementById("choice-" + choice);
  }

  function csrfToken() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) {
      return decodeURIComponent(match[1]);
    }
    var field = form.elements.namedItem("csrfmiddlewaretoken");
    return field ? field.value : "";
  }

  function send(method, url, body) {
    var options = { method: method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body) {
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRFToken"] = csrfToken();
      options.body = JSON.stringify(body);
    }
    if (window.AbortController) {
      var controller = new AbortController();
      options.signal = controller.signal;
      setTimeout(function () { controller.abort(); }, REQUEST_TIMEOUT_MS);
    }
    return fetch(url, options);
  }

  function retrySeconds(response, attempt) {
    var header = response ? response.headers.get("Retry-After") : null;
    var seconds = header && /^[0-9]+$/.test(header) ? parseInt(header, 10) : Math.pow(2, attempt);
    return Math.max(1, Math.min(seconds, MAX_RETRY_SECONDS));
  }

  function showRetry(response, seconds, what) {
    if (!retryNotice) {
      return;
    }
    var reason = response && response.status === 429
      ? gettext("Votes are arriving faster than this study takes them.")
      : gettext("The server is briefly unavailable.");
    var again = interpolate(what(seconds), { seconds: seconds }, true);
    retryNotice.textContent = reason + " " + again;
    retryNotice.hidden = false;
  }

  function hideRetry() {
    if (retryNotice) {
      retryNotice.hidden = true;
      retryNotice.textContent = "";
    }
  }

  // Runs request() until the answer is neither a lost connection nor a "try again later" status.
  function persistently(request, what) {
    var attempt = 0;
    function again(response) {
      var seconds = retrySeconds(response, attempt);
      attempt += 1;
      showRetry(response, seconds, what);
      return new Promise(function (resolve) {
        setTimeout(resolve, seconds * 1000);
      }).then(once);
    }
    function once() {
      return request().then(
        function (response) {
          if (RETRY_STATUSES[response.status]) {
            return again(response);
          }
          hideRetry();
          return response;
        },
        function () {
          return again(null);
        }
      );
    }
    return once();
  }

  function setBusy(value, chosen) {
    busy = value;
    form.setAttribute("aria-busy", value ? "true" : "false");
    buttons.forEach(function (button) {
      button.disabled = value;
      button.classList.toggle("is-chosen", value && button === chosen);
    });
  }

  function fallback(choice, elapsed) {
    var field = document.createElement("input");
    field.type = "hidden";
    field.name = "choice";
    field.value = choice;
    form.appendChild(field);
    clientMsInput.value = String(elapsed);
    form.submit();
  }

  function showTokens(side, tokens) {
    var container = buttonFor(side).querySelector("[data-tokens]");
    container.textContent = "";
    tokens.forEach(function (text, index) {
      if (index > 0) {
        var separator = document.createElement("span");
        separator.className = "token-separator";
        separator.textContent = "–";
        container.appendChild(document.createTextNode(" "));
        container.appendChild(separator);
        container.appendChild(document.createTextNode(" "));
      }
      var token = document.createElement("span");
      token.className = "token";
      token.textContent = text;
      container.appendChild(token);
    });
  }

  function showProgress(progress) {
    each("[data-progress-text]", function (element) {
      var value = progress[element.getAttribute("data-progress-text")];
      if (value !== null && value !== undefined) {
        element.textContent = String(value);
      }
    });
    each("progress[data-progress-value]", function (bar) {
      var max = progress[bar.getAttribute("data-progress-max")];
      var percent = progress[bar.getAttribute("data-progress-percent")];
      if (max) {
        bar.setAttribute("max", String(max));
      }
      bar.setAttribute("value", String(progress[bar.getAttribute("data-progress-value")]));
      bar.textContent = percent === null || percent === undefined ? "" : percent + "%";
    });
  }

  // Announces a new ballot (a live region); once the annotator votes in it, the notice has done its job.
  function showBallot(progress) {
    var number = String(progress.ballot);
    ballotNotice.textContent = "";
    if (number === ballot) {
      return;
    }
    ballot = number;
    var notice = document.createElement("p");
    notice.className = "notice";
    notice.textContent = interpolate(
      gettext("A new round has begun: ballot %(ballot)s of %(ballot_count)s."),
      { ballot: number, ballot_count: progress.ballot_count },
      true
    );
    ballotNotice.appendChild(notice);
  }

  // Finish once the study's minimum of judgements is made; before it, how many remain.
  function showFinish(progress) {
    if (!finish) {
      return;
    }
    var minimum = parseInt(finish.getAttribute("data-min-judgements"), 10) || 0;
    var remaining = Math.max(0, minimum - progress.votes_total);
    var remainingText = document.getElementById("finish-remaining");
    remainingText.textContent = "";
    var count = document.createElement("span");
    count.setAttribute("data-finish-remaining", "");
    count.textContent = String(remaining);
    // The sentence around the number, from the catalog, with the number kept in its own element.
    var sentence = ngettext(
      "After %(remaining)s more comparison you may finish here and leave with your completion code.",
      "After %(remaining)s more comparisons you may finish here and leave with your completion code.",
      remaining
    ).split("%(remaining)s");
    remainingText.appendChild(document.createTextNode(sentence[0]));
    remainingText.appendChild(count);
    remainingText.appendChild(document.createTextNode(sentence.slice(1).join(String(remaining))));
    remainingText.hidden = remaining === 0;
    document.getElementById("finish-ready").hidden = remaining !== 0;
  }

  function show(next, said) {
    showTokens("left", next.left.tokens);
    showTokens("right", next.right.tokens);
    question.textContent = next.question;
    showProgress(next.progress);
    showBallot(next.progress);
    showFinish(next.progress);
    form.classList.add("pointer-resting");
    status.textContent = said + " " + interpolate(
      gettext("Next: %(left)s or %(right)s."),
      { left: next.left.tokens.join(" – "), right: next.right.tokens.join(" – ") },
      true
    );
    assignmentInput.value = String(next.assignment); // last: a failure before it re-sends the old vote
  }

  // The next comparison from GET next, or null when there is none (204).
  function nextComparison() {
    return persistently(function () {
      return send("GET", nextUrl);
    }, function (seconds) {
      return ngettext(
        "Trying again to get the next comparison in %(seconds)s second: nothing is lost, no need to click again.",
        "Trying again to get the next comparison in %(seconds)s seconds: nothing is lost, no need to click again.",
        seconds
      );
    }).then(function (response) {
      if (response.status === 204) {
        return null;
      }
      if (!response.ok) {
        throw new Error("the next comparison failed with HTTP " + response.status);
      }
      return response.json();
    });
  }

  function vote(choice) {
    var chosen = buttonFor(choice);
    if (busy || !chosen) {
      return;
    }
    var elapsed = Math.max(0, Math.round(now() - shownAt));
    var focused = document.activeElement;
    var assignment = assignmentInput.value;
    setBusy(true, chosen);
    var body = { assignment: parseInt(assignment, 10), choice: choice, client_response_ms: elapsed };
    persistently(function () {
      return send("POST", voteUrl, body);
    }, function (seconds) {
      return ngettext(
        "Trying again to record your vote in %(seconds)s second: nothing is lost, no need to click again.",
        "Trying again to record your vote in %(seconds)s seconds: nothing is lost, no need to click again.",
        seconds
      );
    })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("the vote was refused with HTTP " + response.status);
        }
        return response.json();
      })
      .then(function (answer) {
        if (answer.next === undefined) {
          return nextComparison();
        }
        return answer.next;
      })
      .then(function (next) {
        if (next === null) {
          window.location.reload(); // nothing to vote on now: the page says why, and when to come back
          return;
        }
        show(next, gettext("Vote recorded."));
        shownAt = now();
        setBusy(false);
        if (buttons.indexOf(focused) !== -1) {
          question.focus({ preventScroll: true }); // not the button just used: it would look chosen
        }
      })
      .catch(function () {
        if (assignmentInput.value === assignment) {
          fallback(choice, elapsed);
        } else {
          window.location.reload(); // the new comparison is shown: this choice belongs to the old one
        }
      });
  }

  buttons.forEach(function (button) {
    button.addEventListener("click", function (event) {
      event.preventDefault();
      vote(button.value);
    });
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) {
      return;
    }
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) {
      return;
    }
    var choice = KEYS[event.key];
    if (!choice || !buttonFor(choice)) {
      return;
    }
    event.preventDefault();
    if (!event.repeat) {
      vote(choice);
    }
  });

  // A mouse resting on a side must not highlight it in a pair it has not been moved to.
  form.classList.add("pointer-resting");
  document.addEventListener("pointermove", function () {
    form.classList.remove("pointer-resting");
  });

  // "Back to the comparison" at the end of the instructions closes them where the page works with scripts.
  document.getElementById("instructions-close").addEventListener("click", function (event) {
    event.preventDefault();
    instructions.open = false;
    question.focus();
  });

  // A page restored from the back-forward cache may show a comparison already voted: fetch a fresh one.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      window.location.reload();
    }
  });

  // sessionStorage may be off (a privacy setting): then a reload may show a comparison given back, and
  // its vote is refused as a lapsed lease's would be.
  function remembered() {
    try {
      return window.sessionStorage.getItem(RELEASED_KEY);
    } catch (error) {
      return null;
    }
  }

  function remember(assignment) {
    try {
      window.sessionStorage.setItem(RELEASED_KEY, assignment);
    } catch (error) {
      // nothing to remember it in
    }
  }

  function releaseBody(assignment) {
    var body = new FormData();
    body.append("csrfmiddlewaretoken", csrfToken());
    body.append("assignment", assignment);
    return body;
  }

  // Leaving: the comparison goes back to the pool now. Not while a vote is on its way: its answer ends
  // the lease, and a release first would refuse the vote.
  window.addEventListener("pagehide", function () {
    var assignment = assignmentInput.value;
    if (busy || !releaseUrl || !navigator.sendBeacon) {
      return;
    }
    if (navigator.sendBeacon(releaseUrl, releaseBody(assignment))) {
      remember(assignment);
    }
  });

  // This page shows the comparison its predecessor in this tab gave back (a reload): give it back here
  // too, in case the beacon has not arrived yet, then show the next one.
  if (releaseUrl && remembered() === assignmentInput.value) {
    setBusy(true, null);
    remember(""); // once: a failure below reloads, and the reloaded page must not come back here
    var released = assignmentInput.value;
    fetch(releaseUrl, { method: "POST", credentials: "same-origin", body: releaseBody(released) })
      .then(nextComparison)
      .then(function (next) {
        if (next === null) {
          window.location.reload();
          return;
        }
        show(next, gettext("Comparison refreshed."));
        shownAt = now();
        setBusy(false);
      })
      .catch(function () {
        window.location.reload();
      });
  }

  document.getElementById("vote-keys").hidden = false;
})();
