"""The hooks shipped with hermitcrab, each a HOOK.md folder here naming its Python handler in this package; all but
the session-end capture are off until `[hooks] enabled` names them (docs/hooks.md, "Bundled hooks")."""
