"""`python -m harness explore` (traces and the model in a browser), on the group of harness/cli.py, kept apart so that
cli.py stays a map of the commands; imported by cli.py once its helpers exist."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli import Folder, _flag_given, cli
from harness.errors import BadInput
from harness.files import check_writable_dir


# --------------------------------------------------------------------------------------- explore
MODEL_OPTIONS = ("preset", "settings", "variants", "mutation", "out")  # explore's options for a model, not a trace


@cli.command("explore")
@click.argument("targets", nargs=-1, metavar="TRACE... | SPEC")
@click.option("--config", "preset", default=None, help="[SPEC] named preset (see `list`)")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="[SPEC] override a config constant")
@click.option("--variant", "variants", multiple=True, metavar="NAME=VALUE", help="[SPEC] select a protocol variant")
@click.option("--mutation", default=None, help="[SPEC] remove one safety rule (see `list`)")
@click.option("--out", default="traces", show_default=True, type=Folder(file_okay=False),
              help="[SPEC] where walks saved as traces go")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8765, show_default=True,
              help="the port on 127.0.0.1 (0: any free port)")
@click.pass_context
def explore_cmd(ctx, targets, preset, settings, variants, mutation, out, port) -> None:
    """Explore traces or a model in a web browser, served on 127.0.0.1 until Ctrl-C.

    With TRACE files: step through each (buttons, or the arrow keys), each step's action, the protocol
    drawn with what the violation names highlighted, the messages as a timeline, the fields it changed,
    the violated property at the end, the lasso's loop; a counterexample to induction (from `prove`) as
    its pre- and post-state. With SPEC (and --config, --set, --variant,
    --mutation as for `check`): from an initial state choose among the enabled actions, go back and branch,
    see every invariant at each state, and save the walk as a trace `replay` accepts. Only the traces named
    here are served, and nothing in them is run as code; only to the Host names 127.0.0.1:PORT and
    localhost:PORT (403 otherwise), and request bodies over 64 KiB are refused (413). Prints
    `explore: URL`; exit 130 on Ctrl-C, 2 on bad input."""
    from harness.explore import create_app, start_server, url_of
    from harness.registry import load_spec, spec_names
    from harness.trace import read_shown

    if not targets:
        raise BadInput(f"give TRACE files to step through, or a SPEC to explore (one of: {', '.join(spec_names())})")
    if len(targets) == 1 and targets[0] in spec_names() and not Path(targets[0]).is_file():
        spec = load_spec(targets[0])
        model = spec.bind(spec.config(preset, settings, variants, mutation))
        check_writable_dir(out, "--out")
        app = create_app(model=model, out_dir=Path(out))
    else:
        for param in MODEL_OPTIONS:
            if flag := _flag_given(ctx, param):
                raise BadInput(f"{flag} applies to exploring a SPEC, not to TRACE files")
        for t in targets:
            if not Path(t).exists() and t not in spec_names():
                raise BadInput(f"{t}: neither a trace file nor a spec (known specs: {', '.join(spec_names())})")
        app = create_app(traces=[read_shown(t) for t in targets])  # traces, or prove's CTIs
    server = start_server(app, port)
    try:
        print(f"explore: {url_of(server)}", flush=True)
        server.serve_forever()  # Ctrl-C raises Interrupted here: main() reports it and exits 130
    finally:
        server.server_close()


