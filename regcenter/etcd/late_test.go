package etcd_test

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcd"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// TestEtcdALateTransactionActsOnNoNewerNode: a transaction whose answer
// was lost may still be applied later, by a member that held it. By then
// the node it names may have been deleted (by the retry that went
// through) and made again — by another instance, or by the same session
// for its next run. Applied then, the transaction must fail: a running
// mark's late delete would otherwise remove the mark another run holds,
// and a late set or check would act on a node it never knew.
func TestEtcdALateTransactionActsOnNoNewerNode(t *testing.T) {
	cluster := etcdtest.Start(t)
	ctx := testCtx(t)
	cli, err := cluster.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "late", SessionTimeout: 10 * time.Second})
	other := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "late", SessionTimeout: 10 * time.Second})
	for _, tc := range []struct {
		name   string
		op     func(p string) regcenter.Op
		remake *etcd.Center // who makes the node again
	}{
		{"delete, made again by another session", func(p string) regcenter.Op { return regcenter.DeleteOp{Path: p, Version: -1} }, other},
		{"delete, made again by the same session", func(p string) regcenter.Op { return regcenter.DeleteOp{Path: p, Version: -1} }, c},
		{"versioned delete", func(p string) regcenter.Op { return regcenter.DeleteOp{Path: p, Version: 0} }, other},
		{"set", func(p string) regcenter.Op { return regcenter.SetOp{Path: p, Data: []byte("late"), Version: -1} }, c},
		{"versioned set", func(p string) regcenter.Op { return regcenter.SetOp{Path: p, Data: []byte("late"), Version: 0} }, other},
		{"check", func(p string) regcenter.Op { return regcenter.CheckOp{Path: p, Version: 0} }, c},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := "/" + t.Name()[len("TestEtcdALateTransactionActsOnNoNewerNode/"):]
			if _, err := c.Create(ctx, p, []byte("first"), regcenter.Ephemeral); err != nil {
				t.Fatal(err)
			}
			cmps, then, ok := etcd.DirectTxn(c, tc.op(p))
			if !ok {
				t.Fatal("the op would not go directly")
			}
			// Its answer lost; the node deleted and made again meanwhile.
			if err := c.Delete(ctx, p, -1); err != nil {
				t.Fatal(err)
			}
			if _, err := tc.remake.Create(ctx, p, []byte("second"), regcenter.Ephemeral); err != nil {
				t.Fatal(err)
			}
			_, before, err := c.Exists(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := cli.Txn(ctx).If(cmps...).Then(then...).Commit()
			if err != nil {
				t.Fatal(err)
			}
			if resp.Succeeded {
				t.Errorf("the transaction applied late succeeded over the node made again")
			}
			data, after, err := c.Get(ctx, p)
			if err != nil {
				t.Fatalf("the node made again, after the late transaction: %v", err)
			}
			if string(data) != "second" || after != before {
				t.Errorf("the node made again changed: %q %+v, was %+v", data, after, before)
			}
			if err := tc.remake.Delete(ctx, p, -1); err != nil {
				t.Fatal(err)
			}
		})
	}
}
