package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/aerostream/aerostream/gateways/native/client"
)

// Produce a few records to a new topic and wait for their acks.
func ExampleProducer() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, client.DefaultAddr, client.Options{ClientID: "example"})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateTopic(ctx, "orders", 3, 1, nil); err != nil && !errors.Is(err, client.ErrTopicExists) {
		log.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{Compression: client.CompressionZstd})
	defer p.Close(ctx)
	rec := &client.Record{Topic: "orders", Partition: -1, Key: []byte("ORD-1001"), Value: []byte(`{"amount": 99.50}`)}
	if err := p.ProduceSync(ctx, rec); err != nil {
		log.Fatal(err)
	}
	fmt.Println("partition", rec.Partition, "offset", rec.Offset)
}

// Follow every partition of a topic from the first record of the last hour.
func ExampleConsumer() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := client.Dial(ctx, client.DefaultAddr, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	co, err := client.NewConsumer(ctx, cl, client.ConsumerOptions{Topic: "orders", StartTime: time.Now().Add(-time.Hour)})
	if err != nil {
		log.Fatal(err)
	}
	defer co.Close()
	for {
		msgs, err := co.Poll(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range msgs {
			fmt.Printf("%d %d %s %s\n", m.Partition, m.Offset, m.Key, m.Value)
		}
	}
}

// List topics and each partition's high watermark.
func ExampleClient_Describe() {
	ctx := context.Background()
	cl, err := client.Dial(ctx, client.DefaultAddr, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	topics, err := cl.ListTopics(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range topics {
		d, err := cl.Describe(ctx, t.Name)
		if err != nil {
			log.Fatal(err)
		}
		for _, p := range d.Partitions {
			fmt.Println(t.Name, p.Partition, p.HighWatermark)
		}
	}
}

// List the cluster's groups, and how far each is behind on "orders", as
// the gateway computes it.
func ExampleClient_ListGroups() {
	ctx := context.Background()
	cl, err := client.Dial(ctx, client.DefaultAddr, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	groups, err := cl.ListGroups(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range groups {
		lag, err := cl.LagDetail(ctx, g.Group, "orders")
		if err != nil {
			log.Fatal(err)
		}
		for _, p := range lag {
			fmt.Println(g.Group, p.Partition, p.Committed, p.Lag)
		}
	}
}

// A group member that commits what it handled inside its next fetch.
func ExampleGroupConsumer_CommitOnNextPoll() {
	ctx := context.Background()
	cl, err := client.Dial(ctx, client.DefaultAddr, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	g, err := client.JoinGroup(ctx, cl, client.GroupOptions{Group: "billing", Topic: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close(ctx)
	for {
		msgs, err := g.Poll(ctx)
		if err != nil {
			log.Fatal(err)
		}
		next := map[int32]int64{}
		for _, m := range msgs {
			fmt.Printf("%d %d %s\n", m.Partition, m.Offset, m.Value)
			next[m.Partition] = m.Offset + 1
		}
		if err := g.CommitOnNextPoll(ctx, next); err != nil {
			log.Fatal(err)
		}
	}
}
