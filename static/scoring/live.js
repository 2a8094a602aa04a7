// The live view of a running study: fetch the page again every few seconds and swap its figures in
// (the element #live says where from, with data-refresh-url). Without JavaScript the page shows the
// figures at load time, and a reload shows new ones.
(function () {
    "use strict";

    var RETRY_MS = 15000;

    function schedule(panel, delay) {
        if (panel && panel.dataset.refreshUrl) {
            window.setTimeout(function () { refresh(panel); }, delay);
        }
    }

    function period(panel) {
        return 1000 * (parseInt(panel.dataset.refreshSeconds, 10) || 5);
    }

    function refresh(panel) {
        fetch(panel.dataset.refreshUrl, { credentials: "same-origin", headers: { Accept: "text/html" } })
            .then(function (response) {
                if (!response.ok) {
                    throw new Error("HTTP " + response.status);
                }
                return response.text();
            })
            .then(function (html) {
                var page = new DOMParser().parseFromString(html, "text/html");
                var fresh = page.getElementById(panel.id);
                if (!fresh) {
                    return;
                }
                var opened = panel.querySelector("details[open]") !== null;
                fresh = document.importNode(fresh, true);
                var details = fresh.querySelector("details");
                if (details && opened) {
                    details.open = true;  // keep the table of samples open across refreshes
                }
                panel.replaceWith(fresh);
                schedule(fresh, period(fresh));
            })
            .catch(function () {
                schedule(panel, RETRY_MS);
            });
    }

    document.addEventListener("DOMContentLoaded", function () {
        var panel = document.getElementById("live");
        if (panel) {
            schedule(panel, period(panel));
        }
    });
})();
