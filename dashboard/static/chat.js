// The Chat page, live: what the conversation's event stream says is added as it comes, and its forms (a message, a
// command, a question's choice) are posted in place. Without this script the page still works, one reload at a time.
"use strict";

(() => {
  const log = document.getElementById("conversation");
  if (!log) return;
  const draft = document.getElementById("draft");
  const draftText = draft.querySelector(".text");
  const working = document.getElementById("working");
  const problem = document.getElementById("chat-problem");
  const message = document.getElementById("message");

  /** The server's rendering of an entry (its own template: every character of data escaped) as nodes. */
  function nodes(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  }

  function follow() {
    const after = encodeURIComponent(log.dataset.after);
    hermitcrab.live(`/api/chat/stream?after=${after}`, ["entry", "update", "delta", "draft", "working", "reset"],
      (type, data) => {
        if (type === "entry" || type === "update") {
          const shown = log.querySelector(`[data-id="${data.id}"]`);
          if (shown) shown.replaceWith(nodes(data.html));
          else if (type === "entry") log.append(nodes(data.html));
          draft.scrollIntoView({ block: "end" });
        } else if (type === "delta") {
          draftText.append(data.text);
          draft.hidden = false;
        } else if (type === "draft") {
          draftText.textContent = data.text;
          draft.hidden = data.text === "";
        } else if (type === "working") {
          working.textContent = data.on ? "The agent is working…" : "";
        } else if (type === "reset") {
          window.location.reload();
        }
      });
  }

  document.addEventListener("submit", async (event) => {
    const form = event.target.closest("form[data-chat]");
    if (!form) return;
    event.preventDefault();
    // The data first: a disabled button is in no form's data.
    const body = new URLSearchParams(new FormData(form, event.submitter));
    const buttons = form.querySelectorAll("button");
    buttons.forEach((button) => { button.disabled = true; });
    try {
      await hermitcrab.post(form.action, body);
      problem.hidden = true;
      const id = form.querySelector('input[name="id"]');
      if (id) id.value = crypto.randomUUID(); // the next message is another one; a failed send keeps its id
      if (form.contains(message)) message.value = "";
    } catch (error) {
      problem.textContent = `Not sent: ${error.message}`;
      problem.hidden = false;
    } finally {
      buttons.forEach((button) => { button.disabled = false; });
      if (form.contains(message)) message.focus();
    }
  });

  message.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (message.value.trim()) message.form.requestSubmit();
    }
  });

  follow();
  draft.scrollIntoView({ block: "end" });
})();
