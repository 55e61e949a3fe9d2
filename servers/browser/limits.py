"""How large each browser tool argument may be: absurd sizes are refused by the input schema before any work.

The limits sit far above real use (a page's address, a form's text, a short script) and far below what would
freeze the server or the page (a 10 MB URL, a million keystrokes).
"""

from __future__ import annotations

MAX_URL_CHARS = 65_536  # a data: URL of a small page fits; Chromium itself stops at 2 MB
MAX_REF_CHARS = 32  # refs look like e12 or f1e3
MAX_ELEMENT_CHARS = 1_000  # a human description of an element
MAX_TEXT_CHARS = 100_000  # text typed into a field, a form value, a prompt answer
MAX_SLOW_TEXT_CHARS = 2_000  # typed one key at a time, each a round trip to the page
MAX_KEY_CHARS = 64
MAX_WAIT_TEXT_CHARS = 1_000
MAX_FUNCTION_CHARS = 100_000
MAX_VALUES = 1_000  # options to select
MAX_FIELDS = 200  # fields filled in one call
MAX_UPLOADS = 100
MAX_FILENAME_CHARS = 255
