// A CoreDNS build with only the plugins a local cluster's DNS needs. The full CoreDNS binary
// links every cloud provider's SDK; this one is a few MiB and builds in a couple of minutes.
// hack/build-binaries.sh builds it into the binary cache; the cluster runs it as a Pod.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/template"
)

func main() {
	// Only the directives compiled in, in CoreDNS's own plugin order (plugin.cfg): an unknown one
	// in a Corefile is then a clear error.
	dnsserver.Directives = []string{
		"reload", "bind", "ready", "health", "errors", "log", "loadbalance", "cache", "template",
		"kubernetes", "loop",
	}
	coremain.Run()
}
