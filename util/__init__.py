"""Helpers every layer may import (host, install, servers, channels); this package imports nothing of hermitcrab."""
