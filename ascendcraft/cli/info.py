"""``ops``, ``prompt`` and ``doctor``: what the tool knows, asks and finds, printed."""

from __future__ import annotations

import argparse
import json

from .shell import task_from_args


def cmd_ops(args: argparse.Namespace) -> int:
    from ..tasks.registry import list_tasks

    tasks = list_tasks()
    if args.json:
        print(json.dumps([{"name": t.name, "category": t.category,
                           "shapes": [list(s) for s in t.shapes], "dtype": str(t.dtype).replace("torch.", "")}
                          for t in tasks]))
        return 0
    width = max(len(t.name) for t in tasks)
    for t in tasks:
        shapes = ", ".join("x".join(map(str, s)) or "scalar" for s in t.shapes)
        print(f"{t.name:<{width}}  {t.category:<13} {shapes}")
    print(f"{len(tasks)} ops")
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from ..app.errors import UserError
    from ..app.llm import prompt_messages

    if not (args.op or args.task):
        raise UserError("prompt needs --op NAME or --task FILE")
    messages = prompt_messages(task_from_args(args), args.soc, args.candidates)
    if args.json:
        print(json.dumps(messages, ensure_ascii=False))
        return 0
    for m in messages:
        print(f"===== {m['role']} =====")
        print(m["content"].rstrip("\n"))
        print()
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from ..doctor import backend_in_use, diagnose

    findings = diagnose(storage=args.storage, ray_address=args.ray_address)
    if args.json:
        print(json.dumps({"findings": [f.to_dict() for f in findings], "backend": backend_in_use(findings)}))
        return 0
    for f in findings:
        print(f.line())
    print(backend_in_use(findings))
    return 0
