"""Lowering passes, one file each; `compiler_core.lower.PASSES` is the literal order they run in."""
