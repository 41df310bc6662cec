// The Argo CD programs a cluster running rlgen's repositories needs, from the pinned release:
// the application controller, the repo-server, and the askpass helper the repo-server's git
// calls as "argocd" (util/askpass/server.go). Upstream's cmd/main.go picks its command the same
// way, from ARGOCD_BINARY_NAME or the name it runs under; it also links the API server, the CLI,
// Dex and the UI, which nothing here runs and which take most of its build.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/util/log"
)

func init() {
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	// Upstream's main calls grpc.DisableSRVLookups here, which panics unless gRPC's grpclb
	// balancer turned SRV lookups on; that package is linked only by what this build leaves
	// out, so they stay off, as that call makes them.
	name := filepath.Base(os.Args[0])
	if value := os.Getenv("ARGOCD_BINARY_NAME"); value != "" {
		name = value
	}
	commands := map[string]func() *cobra.Command{
		common.CommandApplicationController: appcontroller.NewCommand,
		common.CommandRepoServer:            reposerver.NewCommand,
		common.CommandGitAskPass:            gitaskpass.NewCommand,
	}
	command, found := commands[name]
	if !found {
		fmt.Fprintf(os.Stderr, "%s: this build runs only %s, %s and %s (set ARGOCD_BINARY_NAME)\n", name,
			common.CommandApplicationController, common.CommandRepoServer, common.CommandGitAskPass)
		os.Exit(2)
	}
	cmd := command()
	// git reads the askpass helper's stdout as the credential: nothing else may reach it.
	cmd.SilenceUsage = name == common.CommandGitAskPass
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
