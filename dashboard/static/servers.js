// The Servers page's log tails, followed: the server sends a log's last lines again whenever the log is written.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const tails = document.getElementById("log-tails");
  if (!tails) return;
  const atEnd = (box) => box.scrollHeight - box.scrollTop - box.clientHeight < 8;
  for (const box of tails.querySelectorAll("pre[data-log]")) box.scrollTop = box.scrollHeight;
  hermitcrab.live(tails.dataset.live, ["tail"], (type, data) => {
    const box = tails.querySelector(`pre[data-log="${CSS.escape(data.name)}"]`);
    const note = tails.querySelector(`[data-log-note="${CSS.escape(data.name)}"]`);
    if (!box || !note) return;
    const following = box.hidden || atEnd(box);
    note.textContent = data.note;
    box.textContent = data.lines.join("\n");
    box.hidden = data.lines.length === 0;
    if (following) box.scrollTop = box.scrollHeight; // stay at the newest line unless the owner scrolled up to read
  });
});
