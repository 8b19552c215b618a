"""packed / blocks with the default config otherwise (AMX tiles where the target has them), on the host's cores."""
import compiler_core as cc
from benchmarks.cpu_ab import ab_main


def variants(w, config, target) -> dict:
    chosen = {"packed": dict(config, b_source="packed"), "blocks": dict(config, b_source="blocks")}
    return {name: (lambda c=c: cc.build(w, c, target)) for name, c in chosen.items()}


if __name__ == "__main__":
    ab_main(variants, base="packed", rounds=3)
