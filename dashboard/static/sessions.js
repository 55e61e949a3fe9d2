// A session's transcript, followed while a turn writes to it: new entries are appended as the server renders them.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const transcript = document.getElementById("transcript");
  if (!transcript) return;
  const state = document.getElementById("turn-state");
  const source = hermitcrab.live(transcript.dataset.live, ["entries", "state", "replaced"], (type, data) => {
    if (type === "entries") {
      transcript.insertAdjacentHTML("beforeend", data.html);
    } else if (type === "state") {
      state.textContent = data.text;
    } else {
      source.close(); // the key now names a fresh transcript (after /new): this one is done
      state.textContent = "This session went on in a new transcript: reload the page to follow it.";
    }
  });
});
