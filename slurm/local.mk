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

ferry_modulefile_sed = sed \
	-e 's|@VERSION[@]|$(VERSION)|g' \
	-e 's|@prefix[@]|$(prefix)|g' \
	-e 's|@bindir[@]|$(bindir)|g' \
	-e 's|@libdir[@]|$(libdir)|g' \
	-e 's|@mandir[@]|$(mandir)|g' \
	-e 's|@pkglibdir[@]|$(pkglibdir)|g' \
	-e 's|@pkgdatadir[@]|$(pkgdatadir)|g' \
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

# The Slurm tests (tests/slurm/*.sh) run against the one-node cluster of
# tests/slurm/cluster.sh that ./bootstrap check starts; without it they skip.
MPI_TESTS += \
	tests/slurm/srun.sh \
	tests/slurm/sbatch.sh \
	tests/slurm/checkpoint.sh \
	tests/slurm/install.sh

TEST_DATA_FILES += \
	tests/slurm/common.sh \
	tests/slurm/cluster.sh \
	tests/slurm/fake-ferry.sh
