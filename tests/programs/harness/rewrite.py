"""The mechanical import rule (README.md). A program's lines are never edited by hand: its
FusionFlow copy is rewrite_source() applied to each file, at test time, into a temporary folder.
Only import lines change, and only the module name in them (torch -> fusionflow, torchvision ->
fusionflow.vision); every other line is kept as is, so `torch.x` and `torchvision.x` in the
program's body must find fusionflow.x and fusionflow.vision.x through the names `torch` and
`torchvision`."""
import re
import sys

# the library modules a program imports, and what the FusionFlow copy imports in their place
TARGETS = {"torch": "fusionflow", "torchvision": "fusionflow.vision"}

_MOD = r"(?P<mod>torchvision|torch)"  # the longer name first: `torch` must not eat `torchvision`
_IMPORT = re.compile(r"^(?P<ind>\s*)import " + _MOD + r"(?P<sub>\.[\w.]+)?(?P<alias>\s+as\s+\w+)?(?P<rest>\s*(#.*)?)$")
_FROM = re.compile(r"^(?P<ind>\s*)from " + _MOD + r"(?P<sub>\.[\w.]+)? import ")


def rewrite_line(line):
    """For M in (torch, torchvision), T its target (fusionflow, fusionflow.vision):
    `import M` -> `import T as M`; `import M.X as Y` -> `import T.X as Y`; `import M.X` (which
    binds `M`) -> `import T.X; import T as M`; `from M[.X] import Y` -> `from T[.X] import Y`."""
    body, nl = line.rstrip("\n"), line[len(line.rstrip("\n")):]
    m = _IMPORT.match(body)
    if m:
        ind, mod, sub, alias, rest = (m.group(g) or "" for g in ("ind", "mod", "sub", "alias", "rest"))
        target = TARGETS[mod]
        if alias:
            return "%simport %s%s%s%s%s" % (ind, target, sub, alias, rest, nl)
        if sub:
            return "%simport %s%s; import %s as %s%s%s" % (ind, target, sub, target, mod, rest, nl)
        return "%simport %s as %s%s%s" % (ind, target, mod, rest, nl)
    if _FROM.match(body):
        return _FROM.sub(lambda m: "%sfrom %s%s import " % (m.group("ind"), TARGETS[m.group("mod")], m.group("sub") or ""),
                         body) + nl
    return line


def rewrite_source(text):
    return "".join(rewrite_line(line) for line in text.splitlines(keepends=True))


# The device rule (the harness's third side, issue 51): the program runs on PyTorch itself,
# unchanged except for its device string, which names a FusionFlow backend's PyTorch device
# ('privateuseone:N', fusionflow.torch_device). A 'cpu' literal changes where it is the
# program's choice of device: inside torch.device(...), on a `device = ...` line (the
# `... else 'cpu'` of a cuda check included, `device_type` lines not: autocast's kind), as
# the default of a --device option, and in a --device=cpu argument.
_DEVICE_CALL = re.compile(r"""torch\.device\((["'])cpu\1\)""")
_DEVICE_LINE = re.compile(r"""^\s*(self\.)?device\s*=|add_argument\(\s*["']--device["']""")
_CPU = re.compile(r"""(["'])cpu\1""")


def device_line(line, device):
    line = _DEVICE_CALL.sub("torch.device('%s')" % device, line)
    if _DEVICE_LINE.search(line):
        line = _CPU.sub("'%s'" % device, line)
    return line


def device_source(text, device):
    """text with its device choice changed to `device`; the count of lines changed."""
    lines = text.splitlines(keepends=True)
    out = [device_line(line, device) for line in lines]
    return "".join(out), sum(a != b for a, b in zip(lines, out))


def device_argv(argv, device):
    return ["--device=" + device if a == "--device=cpu" else a for a in argv]


if __name__ == "__main__":  # rewrite.py FILE: prints the FusionFlow copy, to see the rule at work
    with open(sys.argv[1]) as f:
        sys.stdout.write(rewrite_source(f.read()))
