// What every page shares: requests that carry the page's CSRF token, and live updates over EventSource.
"use strict";

const hermitcrab = {
  csrf: () => document.querySelector('meta[name="csrf-token"]').content,

  /** POST `data` (an object) as JSON to `url` with the CSRF token; the parsed JSON answer, or an Error thrown. */
  async post(url, data) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": hermitcrab.csrf() },
      body: JSON.stringify(data ?? {}),
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
