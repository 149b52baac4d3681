// The tether console's only script: a run page follows its log through server-sent events.
// Each message carries an event the server rendered with the page's own template (Jinja-escaped);
// nothing from the log is ever turned into markup here, and status words are set as text.
"use strict";

// The "show" checkboxes hide or show the timeline's events by family (the kind before its dot), new ones too.
function hiddenFamilies() {
  return new Set([...document.querySelectorAll("#show input:not(:checked)")].map((box) => box.value));
}

function applyShow(list) {
  const hidden = hiddenFamilies();
  for (const item of list.querySelectorAll("li.ev")) item.hidden = hidden.has(item.dataset.family);
}

function follow(list) {
  const source = new EventSource(list.dataset.stream);
  const live = document.getElementById("live");
  source.addEventListener("item", (message) => {
    const data = JSON.parse(message.data);
    if (document.getElementById("e" + data.seq)) return; // already on the page (a reconnect resends)
    list.insertAdjacentHTML("beforeend", data.html);
    const added = list.lastElementChild;
    if (added) added.hidden = hiddenFamilies().has(added.dataset.family);
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

// The inbox says when the pending approvals change (new ones, or answered elsewhere) and offers a reload;
// it never reloads by itself, so a reason being typed is not lost.
function watchInbox(banner) {
  const source = new EventSource(banner.dataset.stream);
  source.addEventListener("changed", (message) => {
    const data = JSON.parse(message.data);
    const parts = [data.pending + " pending now"];
    if (data.new.length) parts.push("new: " + data.new.join(", "));
    if (data.gone.length) parts.push("answered or expired: " + data.gone.join(", "));
    banner.textContent = parts.join("; ") + " ";
    const reload = document.createElement("a");
    reload.href = "/approvals";
    reload.textContent = "reload";
    banner.appendChild(reload);
    banner.hidden = false;
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const events = document.getElementById("events");
  const show = document.getElementById("show");
  if (events && show) show.addEventListener("change", () => applyShow(events));
  const list = document.querySelector("ol.events[data-stream]");
  if (list) follow(list);
  const banner = document.getElementById("inbox-changed");
  if (banner) watchInbox(banner);
});
