"""Installing our servers elsewhere: launch entries, Claude Desktop bundles, registry entries and service units.

Not part of the runtime: only the CLI imports this package.
"""
