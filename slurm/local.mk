# slurm/local.mk - included by Makefile.am: the Slurm tests, the modulefiles
# and the site recipes of slurm/.
#
# Modulefiles: "make install" writes an Lmod one and a Tcl one with the
# paths of the prefix it installs into,
#   $(modulefilesdir)/lua/ferry/$(VERSION).lua   (module use .../lua)
#   $(modulefilesdir)/tcl/ferry/$(VERSION)       (module use .../tcl)
# modulefilesdir is $(datadir)/modulefiles unless given on the command line
# (make install modulefilesdir=/apps/modulefiles).  "make modulefile" writes
# the same two files to slurm/ferry.lua and slurm/ferry.tcl in the build tree
# to read before installing.  They are made when installing, not when
# building, so that "make install prefix=..." gets the right paths.
# install-data-local also makes $(pkglibdir)/plugins, the HDF5_PLUGIN_PATH of
# the modulefiles, even when no Zarr codec plugin is built.
#
# The modulefiles load the modules of FERRY_MODULE_DEPS (configure
# --with-module-deps="openmpi/4.1.5 hdf5", or on the make install command
# line) and read, last, the site's own file $(pkgdatadir)/modulefile.site.lua
# (.tcl), which "make install" never writes: it installs the examples
# modulefile.site.lua.sample and modulefile.site.tcl.sample beside it.

modulefilesdir = $(datadir)/modulefiles
# The Python package's directory for PYTHONPATH (python/local.mk), empty
# when it is not built.
if FERRY_PYTHON
FERRY_PY_MODULE_DIR = $(pyexecdir)
else
FERRY_PY_MODULE_DIR =
endif

ferry_modulefile_sed = sed \
	-e 's|@VERSION[@]|$(VERSION)|g' \
	-e 's|@prefix[@]|$(prefix)|g' \
	-e 's|@bindir[@]|$(bindir)|g' \
	-e 's|@libdir[@]|$(libdir)|g' \
	-e 's|@mandir[@]|$(mandir)|g' \
	-e 's|@pkglibdir[@]|$(pkglibdir)|g' \
	-e 's|@pkgdatadir[@]|$(pkgdatadir)|g' \
	-e 's|@pyexecdir[@]|$(FERRY_PY_MODULE_DIR)|g' \
	-e 's|@FERRY_MODULE_DEPS[@]|$(FERRY_MODULE_DEPS)|g'

slurm/ferry.lua: $(srcdir)/slurm/ferry.lua.in Makefile
	$(AM_V_GEN)$(MKDIR_P) slurm && \
	$(ferry_modulefile_sed) $(srcdir)/slurm/ferry.lua.in >$@.tmp && mv -f $@.tmp $@
slurm/ferry.tcl: $(srcdir)/slurm/ferry.tcl.in Makefile
	$(AM_V_GEN)$(MKDIR_P) slurm && \
	$(ferry_modulefile_sed) $(srcdir)/slurm/ferry.tcl.in >$@.tmp && mv -f $@.tmp $@

modulefile: slurm/ferry.lua slurm/ferry.tcl
	@echo "modulefiles for prefix $(prefix): slurm/ferry.lua (Lmod), slurm/ferry.tcl (Tcl)"
.PHONY: modulefile

install-data-local:
	$(MKDIR_P) '$(DESTDIR)$(modulefilesdir)/lua/ferry' \
	  '$(DESTDIR)$(modulefilesdir)/tcl/ferry' '$(DESTDIR)$(pkglibdir)/plugins' \
	  '$(DESTDIR)$(pkgdatadir)'
	$(INSTALL_DATA) $(srcdir)/slurm/modulefile.site.lua.sample \
	  $(srcdir)/slurm/modulefile.site.tcl.sample '$(DESTDIR)$(pkgdatadir)'
	$(ferry_modulefile_sed) $(srcdir)/slurm/ferry.lua.in \
	  >'$(DESTDIR)$(modulefilesdir)/lua/ferry/$(VERSION).lua'
	$(ferry_modulefile_sed) $(srcdir)/slurm/ferry.tcl.in \
	  >'$(DESTDIR)$(modulefilesdir)/tcl/ferry/$(VERSION)'

# The site files (modulefile.site.*) are the site's: uninstall leaves them.
uninstall-local:
	rm -f '$(DESTDIR)$(modulefilesdir)/lua/ferry/$(VERSION).lua' \
	  '$(DESTDIR)$(modulefilesdir)/tcl/ferry/$(VERSION)' \
	  '$(DESTDIR)$(pkgdatadir)/modulefile.site.lua.sample' \
	  '$(DESTDIR)$(pkgdatadir)/modulefile.site.tcl.sample'

CLEANFILES = slurm/ferry.lua slurm/ferry.tcl

# ---- Release tarball checksum and the recipes that carry it ----------------
#
#   make dist-sha256   make dist, then ferry-VERSION.tar.gz.sha256 beside the
#                      tarball (sha256sum's format: "HASH  FILE")
#   make recipes       both, then recipes/package.py and
#                      recipes/ferry-VERSION-foss-2023a.eb in the build tree:
#                      the Spack recipe and the easyconfig of slurm/ with the
#                      tarball's sha256 in place of the 64 zeros they carry
#                      in the source tree.  Fails if a recipe is not for
#                      VERSION or the checksum did not go in.
# Publish the tarball and the two recipes together: the checksum is that of
# this very tarball (a second "make dist" gives other timestamps, another
# checksum).

FERRY_TARBALL = $(PACKAGE)-$(VERSION).tar.gz
FERRY_EASYCONFIG = $(PACKAGE)-$(VERSION)-foss-2023a.eb
FERRY_ZERO_SHA256 = 0000000000000000000000000000000000000000000000000000000000000000

dist-sha256: dist-gzip
	$(AM_V_GEN)if command -v sha256sum >/dev/null 2>&1; then \
	  sha256sum $(FERRY_TARBALL); \
	else \
	  shasum -a 256 $(FERRY_TARBALL); \
	fi >$(FERRY_TARBALL).sha256.tmp && mv -f $(FERRY_TARBALL).sha256.tmp $(FERRY_TARBALL).sha256
	@cat $(FERRY_TARBALL).sha256

recipes: dist-sha256
	$(AM_V_GEN)sum=`sed -n '1s/^\([0-9a-f]\{64\}\) .*/\1/p' $(FERRY_TARBALL).sha256`; \
	test -n "$$sum" || { echo "recipes: no checksum in $(FERRY_TARBALL).sha256" >&2; exit 1; }; \
	$(MKDIR_P) recipes && \
	for f in package.py $(FERRY_EASYCONFIG); do \
	  test -f $(srcdir)/slurm/$$f || { echo "recipes: no slurm/$$f for version $(VERSION)" >&2; exit 1; }; \
	  sed "s/$(FERRY_ZERO_SHA256)/$$sum/" $(srcdir)/slurm/$$f >recipes/$$f.tmp || exit 1; \
	  grep "$$sum" recipes/$$f.tmp >/dev/null || { \
	    echo "recipes: slurm/$$f has no placeholder checksum ($(FERRY_ZERO_SHA256)) to fill" >&2; exit 1; }; \
	  mv -f recipes/$$f.tmp recipes/$$f; \
	done; \
	grep 'version("$(VERSION)", sha256=' recipes/package.py >/dev/null || { \
	  echo "recipes: slurm/package.py has no version(\"$(VERSION)\", sha256=...)" >&2; exit 1; }; \
	echo "recipes/package.py and recipes/$(FERRY_EASYCONFIG): sha256 $$sum of $(FERRY_TARBALL)"
.PHONY: dist-sha256 recipes


TEST_DATA_FILES += \
	tests/slurm/common.sh \
	tests/slurm/cluster.sh \
	tests/slurm/fake-ferry.sh
