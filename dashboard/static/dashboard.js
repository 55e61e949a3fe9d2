// What every page shares: requests that carry the page's CSRF token, and live updates over EventSource.
"use strict";

const hermitcrab = {
  csrf: () => document.querySelector('meta[name="csrf-token"]').content,

  /** POST a form's `body` (URLSearchParams) to `url` with the CSRF token, as the form itself would but asking for
   * JSON; the parsed answer, or an Error with the server's sentence thrown. */
  async post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      headers: { Accept: "application/json", "X-CSRF-Token": hermitcrab.csrf() },
      body,
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(answer.error || `${response.status} ${response.statusText}`);
    return answer;
  },

  /** Call `onEvent(type, data)` for each event of the stream at `url`, the browser reconnecting as it drops. */
  live(url, types, onEvent) {
    const source = new EventSource(url);
    for (const type of types) {
      source.addEventListener(type, (event) => onEvent(type, JSON.parse(event.data)));
    }
    return source;
  },
};
window.hermitcrab = hermitcrab;
