/*
 * The copy buttons of a completion code. Without this script the buttons stay hidden and the code is
 * plain text to select and copy; with it, a button copies its code (the Clipboard API where the page
 * is a secure context, else a selection and execCommand) and says so in a live region.
 */
(function () {
  "use strict";

  var status = document.getElementById("copy-status");
  // Django's JavaScript catalog of the page's language, loaded before this script; else English.
  var gettext = window.gettext || function (text) { return text; };
  var interpolate = window.interpolate || function (format, values) {
    return format.replace(/%\(\w+\)s/g, function (match) { return String(values[match.slice(2, -2)]); });
  };

  function say(text) {
    if (status) {
      status.textContent = text;
    }
  }

  function selectText(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function copyBySelection(element) {
    selectText(element);
    try {
      return document.execCommand("copy");
    } catch (error) {
      return false;
    }
  }

  Array.prototype.forEach.call(document.querySelectorAll("button[data-copy]"), function (button) {
    var code = document.getElementById(button.getAttribute("data-copy"));
    if (!code) {
      return;
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = code.textContent.trim();
      function copied() {
        button.textContent = gettext("Copied");
        say(interpolate(gettext("Code %(code)s copied."), { code: text }, true));
      }
      function failed() {
        selectText(code);
        say(gettext("Press Ctrl+C (or Cmd+C) to copy the selected code."));
      }
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(copied, function () {
          if (copyBySelection(code)) {
            copied();
          } else {
            failed();
          }
        });
      } else if (copyBySelection(code)) {
        copied();
      } else {
        failed();
      }
    });
  });
})();
