"""Lowering passes, one file each; each backend (compiler_core.backends) lists the
literal order its kind runs them in."""
