// The study's admin page: while a simulation of its plan, a search for a plan from a target, or a job
// on its pools (generating items) runs, refresh its panel every few seconds (the panel says so with
// data-refresh-url). Without JavaScript
// the page still shows the state at load time, and a reload shows the progress.
(function () {
    "use strict";

    var PANELS = ["simulations", "plan-search", "study-job"];
    var PERIOD_MS = 2000;
    var RETRY_MS = 10000;

    function schedule(panel, delay) {
        if (panel && panel.dataset.refreshUrl) {
            window.setTimeout(function () { refresh(panel); }, delay);
        }
    }

    function refresh(panel) {
        fetch(panel.dataset.refreshUrl, { credentials: "same-origin" })
            .then(function (response) {
                if (!response.ok) {
                    throw new Error("HTTP " + response.status);
                }
                return response.text();
            })
            .then(function (html) {
                var holder = document.createElement("div");
                holder.innerHTML = html;
                var fresh = holder.querySelector("#" + panel.id);
                if (!fresh) {
                    return;
                }
                panel.replaceWith(fresh);
                schedule(fresh, PERIOD_MS);
            })
            .catch(function () {
                schedule(panel, RETRY_MS);
            });
    }

    document.addEventListener("DOMContentLoaded", function () {
        PANELS.forEach(function (id) {
            schedule(document.getElementById(id), PERIOD_MS);
        });
    });
})();
