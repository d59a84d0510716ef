# deploy/ - container image, Kubernetes manifests, systemd unit, man page.
dist_man8_MANS = deploy/reduced.8

# systemd reads units from $(prefix)/lib/systemd/system for /usr and
# /usr/local alike; `make systemdsystemunitdir=DIR install` puts it elsewhere.
systemdsystemunitdir = $(prefix)/lib/systemd/system

EXTRA_DIST += .dockerignore \
	deploy/Dockerfile deploy/README.md deploy/reduced.service \
	deploy/build-image.sh deploy/check-deploy.sh deploy/podman-env.sh \
	deploy/healthcheck.sh deploy/validate-k8s.mjs deploy/kube-play.mjs \
	deploy/k8s/deployment.yaml deploy/k8s/service.yaml deploy/k8s/hpa.yaml \
	deploy/k8s/pdb.yaml deploy/k8s/kustomization.yaml

# The unit in the tree names the default /usr/local/bin; install it with the
# configured $(bindir) instead.
install-data-local: install-deploy-unit
uninstall-local: uninstall-deploy-unit
install-deploy-unit:
	$(MKDIR_P) '$(DESTDIR)$(systemdsystemunitdir)'
	sed -e 's|^ExecStart=/usr/local/bin/reduced|ExecStart=$(bindir)/reduced|' \
	  '$(srcdir)/deploy/reduced.service' > '$(DESTDIR)$(systemdsystemunitdir)/reduced.service'
	chmod 644 '$(DESTDIR)$(systemdsystemunitdir)/reduced.service'
uninstall-deploy-unit:
	rm -f '$(DESTDIR)$(systemdsystemunitdir)/reduced.service'

# Lint, build and run the image, run the manifests under podman kube play.
# Needs root (it installs podman and friends when missing).
check-deploy: $(bin_PROGRAMS)
	DEPLOY_WORK='$(abs_top_builddir)/build-deploy' \
	REDUCED_BIN='$(abs_top_builddir)/daemon/reduced' \
	  bash '$(abs_top_srcdir)/deploy/check-deploy.sh'

.PHONY: check-deploy install-deploy-unit uninstall-deploy-unit
