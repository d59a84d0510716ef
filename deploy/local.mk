# deploy/ - container image, Kubernetes manifests, systemd unit, man page.
