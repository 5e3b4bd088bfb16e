"""Which files a Bash command reads and changes, for the artifact ledger (``ledger.py``).

The command is split into simple commands (``&&``, ``||``, ``;``, ``|``, ``&``, parentheses; a
heredoc's body is not read as commands), and each is read by what it does: ``sed -i`` and
``perl -i``, ``>``/``>>`` redirects, ``tee``, ``mv``/``git mv`` (both paths), ``cp`` (the
target), ``rm``/``git rm`` and ``touch`` change files; ``cat``/``head``/``tail``/``less``/
``more``/``nl``/``wc``/``bat`` read them.
"""

from __future__ import annotations

import re
import shlex

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)[A-Za-z_]\w*\1")
_READ_COMMANDS = {"cat", "head", "tail", "less", "more", "nl", "wc", "bat"}
_SHELL_SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;", "|&"}


def _lex(text: str) -> list[str]:
    """Shell words of ``text``, separators and redirections as their own words."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _split(words: list[str]) -> list[list[str]]:
    """Words into simple commands, at ``&&``, ``||``, ``;``, ``|``, ``&``, parentheses."""
    out: list[list[str]] = [[]]
    for word in words:
        if word in _SHELL_SEPARATORS:
            out.append([])
        else:
            out[-1].append(word)
    return [c for c in out if c]


def simple_commands(command: str) -> list[list[str]]:
    """The simple commands of a Bash command line, as words; best effort.

    A heredoc's text is data, not shell (its first line is kept, minus ``<<EOF``); each line
    is a command of its own unless quotes span lines; unbalanced quotes fall back to words
    split at spaces.
    """
    body = command.replace("\\\n", " ")
    if m := _HEREDOC.search(body):
        line_end = body.find("\n", m.end())
        body = body[: m.start()] + body[m.end() : None if line_end < 0 else line_end]
    try:
        return [c for line in body.splitlines() for c in _split(_lex(line))]
    except ValueError:  # quotes spanning lines, or unbalanced
        pass
    try:
        return _split(_lex(body))
    except ValueError:
        return _split(body.replace(";", " ; ").replace("&&", " && ").split())


def _operands(args: list[str]) -> list[str]:
    """Arguments that are not options (``--`` ends options)."""
    out: list[str] = []
    options = True
    for arg in args:
        if options and arg == "--":
            options = False
        elif options and arg.startswith("-") and arg != "-":
            continue
        else:
            out.append(arg)
    return out


def _is_path(word: str) -> bool:
    return bool(word) and word != "-" and not word.startswith(("&", "/dev/", "$("))


def bash_files(command: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Files a Bash command changes (``(path, how)``) and files it reads, by its words.

    Recognised: ``sed -i``, ``perl -i``, ``>``/``>>``/``&>`` redirects (not to /dev/…), ``tee``,
    ``mv`` and ``git mv`` (both paths), ``cp`` (the target), ``rm``/``git rm``, ``touch``;
    reads by ``cat``, ``head``, ``tail``, ``less``, ``more``, ``nl``, ``wc``, ``bat``.
    """
    changed: list[tuple[str, str]] = []
    read: list[str] = []
    for words in simple_commands(command):
        # redirections: ``> file``, ``>> file``, ``2> file``, ``&> file``
        rest: list[str] = []
        i = 0
        while i < len(words):
            word = words[i]
            if word in (">", ">>", "&>", ">|", "&>>") and i + 1 < len(words):
                target = words[i + 1]
                if rest and rest[-1].isdigit() and rest[-1] != "1" and word in (">", ">>"):
                    rest.pop()  # ``2> err.log`` still writes a file
                if _is_path(target):
                    changed.append((target, f"Bash: {word}"))
                i += 2
                continue
            if word in ("<",) and i + 1 < len(words):
                if _is_path(words[i + 1]):
                    read.append(words[i + 1])
                i += 2
                continue
            if word in (">&", "<&", "<<<"):
                i += 2
                continue
            rest.append(word)
            i += 1
        while rest and re.fullmatch(r"[A-Za-z_]\w*=.*", rest[0]):
            rest = rest[1:]  # VAR=value prefixes
        while rest and rest[0] in ("sudo", "command", "env", "time", "nohup", "xargs"):
            rest = rest[1:]
        if not rest:
            continue
        name, args = rest[0].rsplit("/", 1)[-1], rest[1:]
        if name == "git" and args and args[0] in ("mv", "rm"):
            name, args = f"git {args[0]}", args[1:]
        ops = [a for a in _operands(args) if _is_path(a)]
        if name in ("sed", "perl"):
            in_place = any(
                (a.startswith("-") and not a.startswith("--") and "i" in a[1:])
                or a.startswith("--in-place")
                for a in args
            )
            if not in_place:
                read += ops[1:] if name == "sed" else []
                continue
            scripts = {args[k + 1] for k, a in enumerate(args[:-1]) if a in ("-e", "--expression")}
            files = [a for a in ops if a not in scripts]
            if not scripts and files:
                files = files[1:]  # the first operand is the script
            changed += [(f, f"Bash: {name} -i") for f in files]
        elif name == "tee":
            changed += [(f, "Bash: tee") for f in ops]
        elif name in ("mv", "git mv"):
            changed += [(f, f"Bash: {name}") for f in ops]
        elif name == "cp" and len(ops) >= 2:
            changed.append((ops[-1], "Bash: cp"))
            read += ops[:-1]
        elif name in ("rm", "git rm"):
            changed += [(f, f"Bash: {name}") for f in ops]
        elif name == "touch":
            changed += [(f, "Bash: touch") for f in ops]
        elif name in _READ_COMMANDS:
            read += [a for a in ops if not a.isdigit()]
    return changed, read
