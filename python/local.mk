# python/local.mk - included by Makefile.am: the Python package ferry
# (python/ferry) and its compiled extension _ferry, when configure found a
# Python 3 with headers (m4/ferry_python.m4; --without-python leaves it out).
#
# The extension is a libtool module linked against libferry.la; "make
# install" puts the package into $(pyexecdir)/ferry under the prefix and
# renames the module _ferry.so to _ferry$(PYTHON_EXT_SUFFIX).  In the build
# tree, python/ferry/ holds the module under that name and a copy of the
# package's .py files, so PYTHONPATH=$(abs_top_builddir)/python imports the
# build (what the tests of tests/python do).  python/setup.py builds the
# same extension against an installed libferry for pip.

EXTRA_DIST += python/setup.py python/pyproject.toml

if FERRY_PYTHON
ferrypyexecdir = $(pyexecdir)/ferry
# Built as a libtool module for the build tree (-rpath makes it shared);
# "make install" links the installed copy itself (install-exec-hook), as
# libtool's relink would, so that "make install prefix=..." (which libtool
# refuses for a module linked against an uninstalled libferry.la) and
# DESTDIR both work.
noinst_LTLIBRARIES += python/ferry/_ferry.la
# LIST: the extension's sources, compiled into the one module _ferry (also
# in python/setup.py and tests/gpu/device.sh's build_ext).
python_ferry__ferry_la_SOURCES = python/ferry/_ferry.h python/ferry/_ferry.c \
	python/ferry/_ferry_array.c python/ferry/_ferry_batch.c \
	python/ferry/_ferry_loader.c
python_ferry__ferry_la_CPPFLAGS = -I$(top_srcdir)/include $(PYTHON_CPPFLAGS)
python_ferry__ferry_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-rpath '$(ferrypyexecdir)'
python_ferry__ferry_la_LIBADD = libferry.la $(PTHREAD_LIBS)
# LIST: the package's Python modules (installed and byte-compiled).
ferrypyexec_PYTHON = python/ferry/__init__.py

# The build tree's importable package.
python/ferry/_ferry$(PYTHON_EXT_SUFFIX): python/ferry/_ferry.la
	$(AM_V_GEN)cp -f python/ferry/.libs/_ferry.so $@ && \
	for f in $(srcdir)/python/ferry/*.py; do \
	  test -f "python/ferry/`basename $$f`" && \
	    cmp -s "$$f" "python/ferry/`basename $$f`" || cp -f "$$f" python/ferry/; \
	done
all-local: python/ferry/_ferry$(PYTHON_EXT_SUFFIX)
CLEANFILES += python/ferry/_ferry$(PYTHON_EXT_SUFFIX)

# After libferry is installed: link the module against the installed one,
# with the installed libdir as its run path.
install-exec-hook:
	$(MKDIR_P) '$(DESTDIR)$(ferrypyexecdir)'
	$(CCLD) $(AM_CFLAGS) $(CFLAGS) $(LDFLAGS) -shared \
	  -o '$(DESTDIR)$(ferrypyexecdir)/_ferry$(PYTHON_EXT_SUFFIX)' \
	  $(python_ferry__ferry_la_OBJECTS:python/ferry/%.lo=python/ferry/.libs/%.o) \
	  -L'$(DESTDIR)$(libdir)' -lferry \
	  -Wl,-rpath,'$(libdir)' $(PTHREAD_LIBS)
endif

TEST_DATA_FILES += \
	tests/python/common.sh \
	tests/python/helpers.py \
	tests/python/make_npy.py \
	tests/python/loader_check.py \
	tests/python/state_check.py \
	tests/python/sampling_check.py \
	tests/python/errors_check.py \
	tests/python/leave_check.py \
	tests/python/interrupt_check.py \
	tests/python/held_check.py
