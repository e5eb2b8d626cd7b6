"""Helpers the report's modules share: formatting, row lookup, the goal table."""

MiB = 1 << 20


def human(n):
    return "%d KiB" % (n >> 10) if n < MiB else "%d MiB" % (n >> 20)


def f2(x):
    return "—" if x is None else "%.2f" % x


def ratio(a, b):
    return a / b if a is not None and b else None


def find(rows, **kw):
    for r in rows:
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def val(rows, key, **kw):
    r = find(rows, **kw)
    return r[key] if r else None


class GoalTable:
    """Rows of `| goal | worst case measured | met |`: the worst case is the one furthest from
    the goal; 'short'/'over' is how far it misses, relative to the goal."""

    def __init__(self):
        self.lines = ["| goal | worst case measured | met |", "|---|---|---|"]

    def check(self, name, cases, want, at_most=False, expected=None):
        cases = [c for c in cases if c[1] is not None]
        if not cases:
            self.lines.append("| %s | not measured | — |" % name)
            return
        worst = (max if at_most else min)(cases, key=lambda c: c[1])
        if (worst[1] <= want) if at_most else (worst[1] >= want):
            verdict = "yes"
        elif at_most:
            verdict = "no: %.2f%% over" % ((worst[1] / want - 1) * 100)
        else:
            verdict = "no: %.2f%% short" % ((1 - worst[1] / want) * 100)
        partial = ("; %d of %d cases measured" % (len(cases), expected)
                   if expected and len(cases) < expected else "")
        self.lines.append("| %s | %.3f (%s%s) | %s |" % (name, worst[1], worst[0], partial,
                                                         verdict))
