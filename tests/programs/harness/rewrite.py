"""The mechanical import rule (README.md). A program's lines are never edited by hand: its
FusionFlow copy is rewrite_source() applied to each file, at test time, into a temporary folder.
Only import lines change, and only the module name in them; every other line is kept as is,
so `torch.x` in the program's body must find fusionflow.x through the name `torch`."""
import re
import sys

_IMPORT = re.compile(r"^(?P<ind>\s*)import torch(?P<sub>\.[\w.]+)?(?P<alias>\s+as\s+\w+)?(?P<rest>\s*(#.*)?)$")
_FROM = re.compile(r"^(?P<ind>\s*)from torch(?P<sub>\.[\w.]+)? import ")


def rewrite_line(line):
    """`import torch` -> `import fusionflow as torch`; `import torch.X as Y` -> `import
    fusionflow.X as Y`; `import torch.X` (which binds `torch`) -> `import fusionflow.X; import
    fusionflow as torch`; `from torch[.X] import Y` -> `from fusionflow[.X] import Y`.
    torchvision is left alone: both sides import the same stand-in (harness/shims)."""
    body, nl = line.rstrip("\n"), line[len(line.rstrip("\n")):]
    m = _IMPORT.match(body)
    if m:
        ind, sub, alias, rest = m.group("ind"), m.group("sub") or "", m.group("alias"), m.group("rest")
        if alias:
            return "%simport fusionflow%s%s%s%s" % (ind, sub, alias, rest, nl)
        if sub:
            return "%simport fusionflow%s; import fusionflow as torch%s%s" % (ind, sub, rest, nl)
        return "%simport fusionflow as torch%s%s" % (ind, rest, nl)
    if _FROM.match(body):
        return _FROM.sub(lambda m: "%sfrom fusionflow%s import " % (m.group("ind"), m.group("sub") or ""), body) + nl
    return line


def rewrite_source(text):
    return "".join(rewrite_line(line) for line in text.splitlines(keepends=True))


if __name__ == "__main__":  # rewrite.py FILE: prints the FusionFlow copy, to see the rule at work
    with open(sys.argv[1]) as f:
        sys.stdout.write(rewrite_source(f.read()))
