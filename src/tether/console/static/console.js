// The tether console's only script: a run page follows its log through server-sent events.
// Each message carries an event the server rendered with the page's own template (Jinja-escaped);
// nothing from the log is ever turned into markup here, and status words are set as text.
"use strict";

function follow(list) {
  const source = new EventSource(list.dataset.stream);
  const live = document.getElementById("live");
  source.addEventListener("item", (message) => {
    const data = JSON.parse(message.data);
    if (document.getElementById("e" + data.seq)) return; // already on the page (a reconnect resends)
    list.insertAdjacentHTML("beforeend", data.html);
  });
  source.addEventListener("status", (message) => {
    const data = JSON.parse(message.data);
    for (const [id, value, prefix] of [["status", data.status, "status"], ["control", data.control, "control"]]) {
      const el = document.getElementById(id);
      if (!el) continue;
      el.textContent = value;
      el.className = prefix + " " + prefix + "-" + value;
    }
    const count = document.getElementById("count");
    if (count) count.textContent = String(data.events);
  });
  source.addEventListener("end", (message) => {
    source.close();
    if (live) live.textContent = "the run finished: " + JSON.parse(message.data).status;
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const list = document.querySelector("ol.events[data-stream]");
  if (list) follow(list);
});
