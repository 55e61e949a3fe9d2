"""The owner's web dashboard, served by `hermitcrab run`: chat, sessions, memory, automations, people, servers, usage.

Server-rendered pages (Jinja2) with a small script of our own for the live parts (`EventSource`); every asset ships
in the package. Only the owner gets in (`access.py`); each page is a module of `pages/` and reads the running host
through the `Context` it is handed (`context.py`)."""
