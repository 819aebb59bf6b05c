"""errors_check.py DIR - run on 2 ranks by errors.sh: a bad option value,
an unknown option and a missing dataset raise the ferry.Error subclass with
the C message, the same on every rank."""
import sys

from helpers import check, rank, same_everywhere

import ferry

d = sys.argv[1]


cases = [
    (dict(batch_size=0), ferry.InvalidArgument, "batch_size"),
    (dict(no_such_option=1), ferry.InvalidArgument, "no_such_option"),
    (dict(shuffle="sideways"), ferry.InvalidArgument, "sideways"),
]
for opts, cls, word in cases:
    try:
        ferry.Loader(d, **opts)
        check(False, "%r accepted" % opts)
    except ferry.Error as e:
        check(type(e) is cls and e.code == cls.code < 0, "%r: %r" % (opts, e))
        check(word in str(e) and e.message == str(e), "message %r" % str(e))
        same_everywhere(str(e), "the message")
try:
    ferry.Loader(d + "/missing")
    check(False, "a missing dataset opened")
except ferry.NotFound as e:
    check("missing" in str(e) and e.code == -4, "message %r" % str(e))
    same_everywhere(str(e), "the message")
names = [o["name"] for o in ferry.options()]
check("batch_size" in names and "seed" in names, "options() table")
if rank == 0:
    print("errors_check.py: passed")
