package main

func (b *bench) plot(dir string) error { return nil }
