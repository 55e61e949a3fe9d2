"""Who may do what: tool policy per kind of principal, origins carried across servers, fences for untrusted text."""
