"""Small statistics helpers (a conformance fixture: median() is wrong for even-length input)."""


def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    ordered = sorted(xs)
    middle = len(ordered) // 2
    return ordered[middle]
