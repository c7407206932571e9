// Command etcd is the upstream etcd server at the exact version that
// k8s.io/apiserver is built and tested against (see ../../go.mod).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
