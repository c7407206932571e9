package main

import (
	"context"

	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
)

// The admit handlers take a context from v1.37 on (Admit(ctx, attrs)); v1.36
// has Admit(attrs). Both releases build from these sources (prepare.sh
// --release), so the method is picked by its signature at run time, once.
type admitWithContext interface {
	Admit(context.Context, *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult
}

type admitWithoutContext interface {
	Admit(*lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult
}

// admitFunc returns h's Admit as a function of the attributes alone.
func admitFunc(h any) func(*lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	switch a := h.(type) {
	case admitWithContext:
		ctx := context.Background()
		return func(attrs *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult { return a.Admit(ctx, attrs) }
	case admitWithoutContext:
		return a.Admit
	}
	return nil
}
