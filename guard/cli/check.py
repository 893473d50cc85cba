"""``guard check`` and ``guard explain``: the verdict for a command, for a program or a person.

Only argument handling and printing live here; the analysis is ``guard.engine``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from typing import Any

from guard.context import Context
from guard.ir import UNKNOWN, Verdict, over_budget
from guard.record import dataclass
from guard.system import budget
from guard.system.fdio import Lines, write_all
from guard.text.display import inert, json_inert, message
from guard.text.redact import redact, redact_known, secret_values, secrets_in

EXIT_ALLOW, EXIT_REFUSE, EXIT_USAGE = 0, 1, 2


def _show(s: str) -> str:
    return redact(s.replace(UNKNOWN, "…"))


def _secrets(v: Verdict, command: str | None) -> list[str]:
    """The credentials of a command as its outputs must not repeat them: those its argvs hold by
    position (``-u user:pass``) and those its text holds (``redact``), with their pieces."""
    return [s for i in v.invocations for s in secret_values(i.argv)] + secrets_in(command or "")


def _redactor(v: Verdict, command: str | None = None) -> Any:
    """How ``v``'s strings are shown: redacted, by shape and by ``_secrets``; as they are when
    that changes nothing (one pass over all)."""
    secrets = _secrets(v, command)
    strings = [x for i in v.invocations for x in (i.program, i.cwd, *i.argv, *i.via)]
    strings.extend(v.unresolved)
    joined = "\n".join(strings)
    if not secrets and redact(joined) == joined:
        return _plain
    return lambda s: redact(redact_known(s.replace(UNKNOWN, "…"), secrets))


def _plain(s: str) -> str:
    return s.replace(UNKNOWN, "…")


def verdict_json(v: Verdict, id_: Any = None, with_id: bool = False, command: str | None = None) -> dict[str, Any]:
    """The verdict as data. What it repeats of the command is redacted (one pass over all of it
    when nothing needs it: most commands hold no secret)."""
    out: dict[str, Any] = {}
    if with_id:
        out["id"] = id_
    show = _redactor(v, command)
    out.update(
        verdict=v.verdict,
        category=v.category,
        rule=v.rule,
        tool=v.tool,
        message=v.message,
        invocations=[
            {
                "program": show(i.program),
                "argv": [show(a) for a in i.argv],
                "cwd": show(i.cwd),
                "in_tree": place,
                "via": [show(x) for x in i.via],
            }
            for i, place in zip(v.invocations, v.in_tree or (None,) * len(v.invocations), strict=False)
        ],
        unresolved=[show(u) for u in v.unresolved],
        parser=v.parser,
    )
    if v.rule_source:
        out["rule_source"] = v.rule_source
    if v.action and v.action != "refuse":  # a rule on trial matched: the command runs
        out["action"] = v.action
        out["action_source"] = v.action_source
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, no usage dump
        print(f"guard: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _context_options(p: argparse.ArgumentParser) -> None:
    """The options ``check`` and ``explain`` share: where the command runs and which rules apply."""
    p.add_argument("--cwd", metavar="DIR", help="the directory the command runs in (default: the current one)")
    p.add_argument("--tree", action="append", default=[], metavar="DIR",
                   help="a shared tree root; repeat for several (default: GUARD_TREE, then the config's trees)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="set a variable in the environment the command sees; repeatable")
    p.add_argument("--rules", action="append", default=[], metavar="PATH",
                   help="a rule file or folder added after GUARD_RULES; repeatable")
    p.add_argument("--strict", action="store_true", help="refuse every git whose repository cannot be placed")


class _Help(argparse.HelpFormatter):
    """Help at a fixed width, so its wording does not depend on the terminal it is printed on."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=100, max_help_position=30)


def _check_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="guard check", formatter_class=_Help,
                description="The verdict for a command: 'allow' (exit 0), or the refusal message (exit 1).")
    _context_options(p)
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.add_argument("--jsonl", action="store_true",
                   help="read JSON lines ({\"command\": …, \"cwd\": …, \"env\": …}) on stdin, answer one per line")
    p.add_argument("--time-budget", type=_positive, default=budget.DEFAULT_SECONDS, metavar="SECONDS",
                   help="stop analysing a command after this long (default: %(default)s)")
    p.add_argument("--memory-budget", type=_positive, default=budget.DEFAULT_MEMORY_MIB, metavar="MIB",
                   help="stop analysing a command that needs more memory than this; with --jsonl, per worker "
                        "(default: %(default)s)")
    p.add_argument("--jobs", type=_count, default=_default_jobs(), metavar="N",
                   help="with --jsonl: analyse up to N lines at once, each in a worker of its own; "
                        "answers stay in input order (default: the CPUs this process may use, at most 4: %(default)s)")
    p.add_argument("command", nargs="*", help="the command, as one word or several (after --)")
    return p


def _default_jobs() -> int:
    """The CPUs this process may run on, fewer when its cgroup's quota allows fewer, at most 4."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max") as fh:  # "QUOTA PERIOD", or "max PERIOD"
            quota, period = fh.read().split()[:2]
        if quota != "max":
            n = min(n, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return max(1, min(4, n))


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 256:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 256, got {text!r}")
    return n


def _explain_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="guard explain", formatter_class=_Help,
        description="The analysis of a command, for a person: the parse, every invocation with its resolved cwd, "
                    "via chain and facts (what a rule's match: sees), and the rule that fired with its file and "
                    "line, or why none did. Exit 0 whatever the verdict.",
    )
    _context_options(p)
    p.add_argument("--json", action="store_true", help="print the analysis as one JSON object")
    p.add_argument("command", nargs="*", help="the command, as one word or several (after --)")
    return p


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _env_pairs(pairs: Sequence[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ValueError(f"--env expects NAME=VALUE, got {pair!r}")
        k, v = pair.split("=", 1)
        env[k] = v
    return env


def _base_context(ns: argparse.Namespace) -> Context:
    env = dict(os.environ)
    env.update(_env_pairs(ns.env))
    from guard.ruleset.paths import entry_path

    for r in ns.rules:
        if not os.path.exists(entry_path(r)):
            raise ValueError(f"--rules {r}: no such file or folder")
    rules = tuple(ns.rules) or None
    extra = tuple(p for p in env.get("GUARD_RULES", "").split(":") if p)
    ctx = Context.from_environ(
        cwd=ns.cwd or _current_dir(env),
        env=env,
        trees=tuple(ns.tree) or None,
        rule_paths=extra + (rules or ()),
    )
    if ns.strict:
        from guard.record import replace

        ctx = replace(ctx, strict=True)
    return ctx


def _current_dir(env: dict[str, str]) -> str:
    """The working directory; when it has been deleted, the ``PWD`` it was entered as."""
    try:
        return os.getcwd()
    except OSError:
        pwd = env.get("PWD", "")
        return pwd if pwd.startswith("/") else "/"


def _config_errors(ctx: Context) -> list[str]:
    from guard.engine import rules_for

    return rules_for(ctx).errors


def _parsed(argv: list[str], parser: argparse.ArgumentParser | None = None) -> tuple[argparse.Namespace, Context] | None:
    """The options and the context they give; None (after a one-line message) when unusable."""
    ns = (parser or _check_parser()).parse_args(argv)
    try:
        return ns, _base_context(ns)
    except ValueError as e:
        print(f"guard: {e}", file=sys.stderr)
        return None


def cmd_check(argv: list[str]) -> int:
    parsed = _parsed(argv)
    if parsed is None:
        return EXIT_USAGE
    ns, ctx = parsed
    errors = _config_errors(ctx)
    if errors:
        for e in errors[:5]:
            print(f"guard: configuration error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if ns.jsonl:
        _hold_stdio()
        return _check_stream(_pool(ctx, ns), _fail_closed(ctx))
    worker = _worker(ctx, ns)
    if not ns.command:
        print("guard: check needs a command (guard check [options] -- COMMAND)", file=sys.stderr)
        return EXIT_USAGE
    command = " ".join(ns.command) if len(ns.command) > 1 else ns.command[0]
    request = json.dumps({"command": command}).encode()
    res = json.loads(_answer(worker, request, _fail_closed(ctx)))
    worker.stop()
    if res.get("verdict") == "error":  # a bug in guard: one line, never a traceback
        print(f"guard: internal error: {res.get('message')}", file=sys.stderr)
        return EXIT_USAGE
    res.pop("id", None)
    if ns.json:
        print(json_inert(json.dumps(res, ensure_ascii=False)))
    elif res["verdict"] == "refuse" or res.get("action") == "warn":
        print(res["message"])
    elif res.get("action") == "observe":
        print(f"allow (observed: rule {res['rule']} would refuse it, {res['category']})")
    else:
        unresolved = res.get("unresolved") or []
        print("allow" + (f" (unresolved: {inert('; '.join(unresolved))})" if unresolved else ""))
    return EXIT_REFUSE if res["verdict"] == "refuse" else EXIT_ALLOW


# --------------------------------------------------------------------------- answering lines

# A line longer than this is not read into memory: it is answered with an error and skipped.
MAX_LINE_BYTES = 64 * 1024 * 1024
# Answers waiting behind a line still being analysed: no more lines are read past this many, or
# this many bytes of them, so a slow line followed by a flood costs no more memory than this.
WINDOW_LINES = 1024
WINDOW_BYTES = 16 << 20
# While every worker holds this many lines, the stream sleeps BATCH_WAIT before it looks for
# answers, and answers ready to go out wait at most FLUSH_AFTER (or 64 KiB) while others are
# being answered: a caller that waits for an answer before sending more meets an idle pool and
# gets it at once.
BATCH_BACKLOG = 4
BATCH_WAIT = 0.0005
FLUSH_AFTER = 0.002


def _fail_closed(ctx: Context) -> bool:
    """``GUARD_FAIL=closed`` from guard's own environment and options, never from a line's."""
    return ctx.env.get("GUARD_FAIL", "").strip().lower() == "closed"


def _hold_stdio() -> None:
    """A closed stdin or stdout is /dev/null from here on: the workers' pipes must not take the
    number, or the stream would read or write a worker's pipe. Closed stdin is empty input."""
    for fd in (0, 1):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def _warm(ctx: Context) -> None:
    import gc

    from guard import warmup

    warmup.run(ctx)  # every worker is forked with the rules and stages loaded, the grammar mapped
    gc.freeze()  # and the collector leaves those pages shared


def _worker(ctx: Context, ns: argparse.Namespace) -> budget.Worker:
    from guard import parse
    from guard.engine import analyze

    analyze("true", ctx)  # one command: load the rules before the worker is forked
    parse.warm()  # and the grammar, outside the worker's memory budget
    return budget.Worker(lambda line: _handle_line(line, ctx), ns.time_budget, int(ns.memory_budget))


def _pool(ctx: Context, ns: argparse.Namespace) -> budget.Pool:
    _warm(ctx)
    return budget.Pool(lambda line: _handle_line(line, ctx), ns.jobs, ns.time_budget, int(ns.memory_budget))


def _handle_line(raw: bytes, ctx: Context) -> bytes:
    """In the worker: the answer to one input line, as JSON bytes (no newline)."""
    from guard.engine import analyze
    from guard.record import replace

    id_: Any = None
    has_id = False
    try:
        text = raw.decode("utf-8", "replace")
        if text.startswith("\ufeff"):  # as json.loads says it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        obj = _DECODE(text)
        if isinstance(obj, dict):
            has_id, id_ = "id" in obj, obj.get("id")
        if not isinstance(obj, dict) or not isinstance(obj.get("command"), str):
            raise ValueError("expected an object with a string 'command'")
        lctx = ctx
        if obj.get("cwd") is not None:
            lctx = replace(lctx, cwd=str(obj["cwd"]).replace("\0", ""))
        if isinstance(obj.get("env"), dict):
            env = dict(lctx.env)
            env.update({str(k).replace("\0", ""): str(v).replace("\0", "") for k, v in obj["env"].items()})
            lctx = replace(lctx, env=env)
        # no shell ever sees a NUL in a command: argv ends at one, and bash drops them from what
        # it reads; the analysis sees what is left
        v = analyze(obj["command"].replace("\0", ""), lctx)
        res = verdict_json(v, id_, has_id, obj["command"])
        cut = over_budget(v) if _fail_closed(ctx) else None
        if cut is not None:  # a budget stopped the analysis: refused under GUARD_FAIL=closed
            res.update(verdict="refuse", category="internal-error",
                       message=f"guard: refusing the command (GUARD_FAIL=closed): {message(cut, 300)}")
    except MemoryError:
        raise
    except RecursionError:
        return error_answer(raw, "the line is nested too deeply to read")
    except Exception as e:  # one bad line never stops the stream
        if not has_id:
            return error_answer(raw, f"{type(e).__name__}: {e}"[:500])
        res = {"id": id_, "verdict": "error", "message": f"{type(e).__name__}: {e}"[:500]}
    return _dumps(res)


# Made once: ``json.loads(…, strict=False)`` and ``json.dumps(…, ensure_ascii=False)`` build a
# decoder or an encoder per call, a few microseconds of every line of a stream.
_DECODE = json.JSONDecoder(strict=False).decode
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


def _dumps(res: dict[str, Any]) -> bytes:
    """One answer line; a character a terminal could act on (C1, bidi, a lone surrogate) is
    written as its JSON escape, so the line is inert on a terminal and reads back the same."""
    return json_inert(_ENCODE(res)).encode("utf-8")


_ID = re.compile(rb'"id"\s*:\s*')


def salvage_id(raw: bytes) -> tuple[bool, Any]:
    """The line's ``id`` when the line itself could not be answered: from the JSON when it
    parses, else from the first ``"id": VALUE`` in it."""
    text = raw[:1 << 20].decode("utf-8", "replace")
    try:
        obj = json.loads(text, strict=False)
        if isinstance(obj, dict):
            return ("id" in obj), obj.get("id")
        return False, None
    except (ValueError, RecursionError):
        pass
    m = _ID.search(raw[:1 << 20])
    if m is None:
        return False, None
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(text, len(raw[: m.end()].decode("utf-8", "replace")))
    except (ValueError, RecursionError):
        return False, None
    return True, value


_STOPPED = {
    "time": "analysis stopped: the command took longer than {} to analyse",
    "memory": "analysis stopped: the command needed more than {} to analyse",
    "crash": "analysis stopped: the analyser crashed ({})",
}


def partial_answer(raw: bytes, outcome: budget.Outcome, closed: bool) -> bytes:
    """The answer for a line whose analysis did not finish: nothing found, and ``unresolved``
    says why; refused under ``GUARD_FAIL=closed``."""
    has_id, id_ = salvage_id(raw)
    note = _STOPPED.get(outcome.kind, "analysis stopped: {}").format(outcome.detail)
    res: dict[str, Any] = {"id": id_} if has_id else {}
    res.update(
        verdict="refuse" if closed else "allow",
        category="internal-error" if closed else None,
        rule=None,
        tool=None,
        message=f"guard: refusing the command (GUARD_FAIL=closed): {note}" if closed else None,
        invocations=[],
        unresolved=[note],
        parser=None,
    )
    return _dumps(res)


def error_answer(raw: bytes, message: str) -> bytes:
    has_id, id_ = salvage_id(raw)
    res: dict[str, Any] = {"id": id_} if has_id else {}
    res.update(verdict="error", message=message)
    return _dumps(res)


def _answer(worker: budget.Worker, raw: bytes, closed: bool) -> bytes:
    return _answer_of(raw, worker.ask(raw), closed)


def _answer_of(raw: bytes, outcome: budget.Outcome, closed: bool) -> bytes:
    if outcome.kind == "ok" and outcome.answer is not None:
        return outcome.answer
    return partial_answer(raw, outcome, closed)


def _flush(fd: int, out: bytearray) -> bool:
    """Write and empty ``out``; False when the reader went away."""
    ok = write_all(fd, out)
    out.clear()
    return ok


def _check_stream(pool: budget.Pool, closed: bool, fd: int = 0, out_fd: int = 1) -> int:
    """One answer per input line, in input order, the id echoed whatever happens to the line.

    Lines go to the pool's workers as they arrive; answers are put in order as soon as the ones
    before them are, and written out whenever nothing else is ready (so a caller that sends one
    line and waits gets its answer at once), once 64 KiB of them wait, or once the oldest has
    waited FLUSH_AFTER while a burst is being answered."""
    lines = Lines(fd, MAX_LINE_BYTES)
    raws: dict[int, bytes] = {}  # the lines the workers hold, for an answer they could not give
    done: dict[int, bytes] = {}
    waiting = 0  # bytes in done
    held: tuple[int, bytes] | None = None  # the next line, which no worker could take yet
    sent = written = 0
    out = bytearray()
    out_since = 0.0  # when the oldest answer in ``out`` was put there

    def room() -> bool:  # for another line behind the oldest unanswered one
        return sent - written < WINDOW_LINES and waiting < WINDOW_BYTES

    def give(seq: int, answer: bytes) -> None:
        nonlocal waiting
        done[seq] = answer
        waiting += len(answer)

    try:
        while True:
            while held is not None or (room() and (item := lines.take()) is not None):
                if held is None:
                    raw, too_long = item
                    sent += 1
                    if too_long:
                        give(sent - 1, error_answer(raw, f"line longer than {MAX_LINE_BYTES} bytes: not read"))
                        continue
                    if not raw.strip():
                        give(sent - 1, error_answer(raw, "empty line: expected a JSON object with a string 'command'"))
                        continue
                    held = (sent - 1, raw)
                try:
                    if not pool.take(*held):
                        break  # every worker is busy: the line waits
                    raws[held[0]] = held[1]
                except MemoryError:  # the line could not even be handed over
                    give(held[0], partial_answer(b"", budget.Outcome("memory", detail="the memory available"), closed))
                held = None
            while written in done:
                answer = done.pop(written)
                waiting -= len(answer)
                out += answer
                out += b"\n"
                written += 1
            if lines.eof and held is None and not lines.queued() and written == sent:
                return EXIT_ALLOW  # the last answers are written below
            reading = [fd] if held is None and not lines.eof and lines.queued() < 1024 and room() else []
            if pool.backlog() >= BATCH_BACKLOG:
                # every worker has lines in hand for a while: let their answers gather, one
                # wake-up for several instead of one per answer
                time.sleep(BATCH_WAIT)
            answered, readable = pool.poll(0, reading)
            now = time.monotonic()
            if not answered and not readable:  # nothing else ready: what is answered goes out
                if out and not _flush(out_fd, out):
                    return EXIT_ALLOW  # the reader went away: nobody is left to answer
                answered, readable = pool.poll(None, reading)
            elif (len(out) >= 1 << 16 or (out and now - out_since >= FLUSH_AFTER)) and not _flush(out_fd, out):
                return EXIT_ALLOW
            if not out:
                out_since = now
            for key, outcome in answered:
                give(key, _answer_of(raws.pop(key), outcome, closed))  # type: ignore[arg-type, call-overload]
            if readable:
                lines.fill()
    finally:
        pool.stop()
        if out:  # at the end, and after an interrupt: the answers already given
            _flush(out_fd, out)


def cmd_explain(argv: list[str]) -> int:
    parsed = _parsed(argv, _explain_parser())
    if parsed is None:
        return EXIT_USAGE
    ns, ctx = parsed
    if not ns.command:
        print("guard: explain needs a command (guard explain [options] -- COMMAND)", file=sys.stderr)
        return EXIT_USAGE
    command = " ".join(ns.command) if len(ns.command) > 1 else ns.command[0]
    ex = explanation(command, ctx)
    if ns.json:
        print(json_inert(json.dumps(explain_json(ex), ensure_ascii=False)))
    else:  # what it repeats of the command: redacted, and inert on a terminal
        text = redact(redact_known(explain_text(ex), _secrets(ex.verdict, ex.command)))
        print("\n".join(inert(line) for line in text.split("\n")))
    return EXIT_ALLOW


@dataclass(frozen=True)
class Explanation:
    """One command's analysis: its context, parse, verdict and each invocation's facts."""

    command: str
    ctx: Context
    parser: str
    parse_error: str | None
    verdict: Verdict
    facts: tuple[dict[str, Any], ...]  # one per invocation, in order


def explanation(command: str, ctx: Context) -> Explanation:
    from guard import parse, resolve
    from guard.engine import rules_for
    from guard.policy import classify as classifier
    from guard.policy.facts import facts_for

    rs = rules_for(ctx)
    ctx = classifier.effective_context(ctx, rs)
    script = parse.parse(command)
    res = resolve.resolve(script, ctx, parse.parse)
    v = classifier.classify(script, res, ctx, rs)
    world = classifier.world_of(ctx, rs)
    facts = tuple(ordered_facts(facts_for(inv, world)) for inv in v.invocations)
    return Explanation(command, ctx, script.parser, script.error, v, facts)


# the facts a rule most often matches first; the rest follow by name
_FIRST = ("program", "subcommand", "action", "args", "flags")


def ordered_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """The facts as JSON values (sets sorted, unresolved parts shown as …), in a stable order."""
    keys = [k for k in _FIRST if k in facts] + sorted(k for k in facts if k not in _FIRST)
    return {k: _json_value(facts[k]) for k in keys}


def _json_value(v: Any) -> Any:
    if isinstance(v, str):
        return _plain(v)
    if isinstance(v, (set, frozenset)):
        return sorted(_json_value(x) for x in v)
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    return v


_PLAIN = re.compile(r"[^\s\[\]{},:'\"#&*!|>%@`?]+")


def _flow(v: Any) -> str:
    """A fact value as a YAML flow value, the way a rule's ``match:`` would write it."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_flow(x)}" for k, x in v.items()) + "}"
    text = str(v)
    if isinstance(v, str) and _PLAIN.fullmatch(text) and _reads_back(text):
        return text
    return json.dumps(v, ensure_ascii=False)


def _reads_back(text: str) -> bool:
    """Whether YAML reads ``text`` written plain as this same string (not a number, null, …)."""
    import yaml

    try:
        return yaml.safe_load(f"[{text}]") == [text]
    except yaml.YAMLError:
        return False


def _wrapped(head: str, items: list[str], width: int = 100) -> list[str]:
    """``head`` and the items joined by commas, broken between items before ``width``."""
    lines, line = [], head
    for n, item in enumerate(items):
        part = item + ("," if n < len(items) - 1 else "")
        if line.strip() and line != head and len(line) + 1 + len(part) > width:
            lines.append(line)
            line = " " * len(head) + part
        else:
            line += ("" if line == head else " ") + part
    lines.append(line)
    return lines


def explain_json(ex: Explanation) -> dict[str, Any]:
    out: dict[str, Any] = {"command": ex.command, "cwd": ex.ctx.cwd, "trees": list(ex.ctx.trees)}
    out.update(verdict_json(ex.verdict, command=ex.command))
    out["parser"] = ex.parser
    out["parse_error"] = ex.parse_error
    for inv, facts in zip(out["invocations"], ex.facts, strict=True):
        inv["facts"] = facts
    return _redacted(out, _secrets(ex.verdict, ex.command))


def _redacted(value: Any, secrets: list[str]) -> Any:
    """Every string in ``value`` redacted (by ``secrets`` first, then by shape)."""
    if isinstance(value, str):
        return redact(redact_known(value, secrets))
    if isinstance(value, list):
        return [_redacted(x, secrets) for x in value]
    if isinstance(value, dict):
        return {k: _redacted(x, secrets) for k, x in value.items()}
    return value


def explain_text(ex: Explanation) -> str:
    command, ctx, v = ex.command, ex.ctx, ex.verdict
    lines = [f"command: {command if len(command) < 300 else command[:297] + '...'}"]
    lines.append(f"cwd: {ctx.cwd}   tree: {':'.join(ctx.trees)}")
    lines.append(f"parser: {ex.parser}" + (f" ({ex.parse_error})" if ex.parse_error else ""))
    lines.append(f"invocations: {len(v.invocations)}")
    places = v.in_tree or (None,) * len(v.invocations)
    for n, (inv, place, facts) in enumerate(zip(v.invocations, places, ex.facts, strict=False), 1):
        where = {True: "in the tree", False: "outside the tree", None: "unknown"}[place]
        lines.append(f"  {n}. {' '.join(_plain(a) for a in inv.argv)}")
        if "repo_path" in facts and facts["repo_path"] != _plain(inv.cwd):  # the place is the repository's
            lines.append(f"     cwd {_plain(inv.cwd)}, repository {facts['repo_path']} ({where})")
        else:
            lines.append(f"     cwd {_plain(inv.cwd)} ({where})")
        if inv.via:
            lines.append(f"     via {' → '.join(_plain(x) for x in inv.via)}")
        lines.extend(_wrapped("     facts: ", [f"{k}: {_flow(x)}" for k, x in facts.items()]))
    if v.unresolved:
        lines.append("unresolved:")
        lines.extend(f"  - {u}" for u in v.unresolved)
    if v.verdict == "refuse" or v.action in ("warn", "observe"):
        if v.verdict == "refuse":
            lines.append(f"verdict: refuse ({v.category}) by rule {v.rule} at {v.rule_source}")
        else:
            lines.append(f"verdict: allow, {v.action} ({v.category}) by rule {v.rule} at {v.rule_source}")
        lines.append(f"action: {v.action} (from {v.action_source})")
        lines.append(f"tool: {v.tool or '-'}")
        lines.append(f"message: {v.message}")
    else:
        lines.append("verdict: allow (no refusing rule matched any invocation)")
    return "\n".join(lines)
