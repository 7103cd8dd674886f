package main

import "context"

func (b *bench) measureFailover(ctx context.Context) error { return nil }
