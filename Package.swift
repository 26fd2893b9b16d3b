// swift-tools-version:6.3
// The one package of the exposure-notification backend: shared libraries, seven services, the `cwa` client.

import PackageDescription

/// Settings every target of ours compiles with (Swift 6 language mode is the tools-version default).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "exposure-notification-backend",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "test-result-service", targets: ["TestResultService"]),
        .executable(name: "verification-service", targets: ["VerificationService"]),
        .executable(name: "submission-service", targets: ["SubmissionService"]),
        .executable(name: "distribution-service", targets: ["DistributionService"]),
        .executable(name: "portal-service", targets: ["PortalService"]),
        .executable(name: "federation-service", targets: ["FederationService"]),
        .executable(name: "data-donation-service", targets: ["DataDonationService"]),
        .executable(name: "cwa", targets: ["CWATool"]),
        .executable(name: "efgs-gateway", targets: ["EFGSGateway"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/attaswift/BigInt.git", from: "6.0.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(
            url: "https://github.com/apple/swift-configuration.git",
            from: "1.4.0",
            traits: [.defaults, "CommandLineArguments"]
        ),
        // The cwa client's command line, and the HDR latency histograms of its load generator.
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
    ],
    targets: [
        // MARK: - Shared libraries
        .target(
            name: "ENModels",
            dependencies: [
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Shared/Models",
            resources: [.copy("Resources/derivation-maps.json")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ENCrypto",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto")
            ],
            path: "Shared/Crypto",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ENPersistence",
            dependencies: [
                "ENCrypto",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Shared/Persistence",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ENKeyStore",
            dependencies: [
                "ENModels",
                "ENPersistence",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Shared/KeyStore",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ENFederation",
            dependencies: [
                "ENModels",
                "ENCrypto",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "BigInt", package: "BigInt"),
            ],
            path: "Shared/Federation",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ENAttestation",
            dependencies: [
                "ENCrypto",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Shared/Attestation",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ENServiceKit",
            dependencies: [
                "ENPersistence",
                "ENCrypto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Shared/ServiceKit",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ENNHS",
            dependencies: [
                "ENCrypto",
                "ENModels",
                "ENPersistence",
                "ENServiceKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Shared/NHS",
            exclude: ["Resources/NOTICE.md"],
            resources: [.copy("Resources/cta-banned-words.txt")],
            swiftSettings: swiftSettings
        ),

        // MARK: - Services
        service(
            "TestResult",
            binary: "test-result-service",
            extra: [
                "ENNHS",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        service(
            "Verification",
            binary: "verification-service",
            extra: [
                "ENNHS",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            resources: [.copy("openapi.yaml"), .copy("openapi-internal.yaml")]
        ),
        service(
            "Submission",
            binary: "submission-service",
            extra: [
                "ENNHS",
                "ENKeyStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),

        service(
            "Distribution",
            binary: "distribution-service",
            extra: [
                "ENNHS",
                "ENKeyStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            // Resources/nhs: the NHS app's static documents (our own content, nhs §9).
            resources: [.copy("Resources/app-config.json"), .copy("Resources/nhs"), .copy("openapi-internal.yaml")]
        ),

        service(
            "Federation",
            binary: "federation-service",
            extra: [
                "ENKeyStore",
                "ENFederation",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),

        service(
            "DataDonation",
            binary: "data-donation-service",
            extra: [
                "ENNHS",
                "ENAttestation",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            // Resources/: the NHS analytics privacy merge table, with its attribution.
            resources: [.copy("openapi.yaml"), .copy("openapi-internal.yaml"), .copy("Resources")]
        ),

        service(
            "Portal",
            binary: "portal-service",
            extra: [
                "ENNHS",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            resources: [.copy("Resources"), .copy("openapi.yaml")],
            exclude: ["docs"]
        ),

        // MARK: - Tools

        .executableTarget(
            name: "CWATool",
            dependencies: [
                "ENModels",
                "ENCrypto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "Tools/CWA",
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "EFGSGateway",
            dependencies: [
                "ENModels",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                "ENCrypto",
                "ENPersistence",
                "ENServiceKit",
                "ENFederation",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tools/EFGSGateway",
            exclude: ["README.md"],
            resources: [.copy("openapi.yaml")],
            swiftSettings: swiftSettings
        ),

        // MARK: - Tests
        .target(
            name: "ENTestSupport",
            dependencies: [
                "ENAttestation",
                "ENCrypto",
                "ENKeyStore",
                "ENNHS",
                "ENModels",
                "ENPersistence",
                "ENServiceKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Tests/Support",
            swiftSettings: swiftSettings
        ),
        libraryTests("ENModels", extra: ["ENCrypto"], resources: [.copy("Vectors")]),
        libraryTests("ENCrypto", extra: [.product(name: "Crypto", package: "swift-crypto")]),
        libraryTests("ENPersistence"),
        libraryTests(
            "ENServiceKit",
            extra: [
                "ENCrypto", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        libraryTests("ENKeyStore"),
        libraryTests(
            "ENNHS",
            extra: ["ENCrypto", "ENServiceKit", .product(name: "Crypto", package: "swift-crypto")]
        ),
        libraryTests(
            "ENFederation",
            extra: [
                "ENModels", .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        libraryTests(
            "ENAttestation",
            extra: [
                "ENCrypto", .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        serviceTests("TestResult", extra: ["ENNHS"]),
        serviceTests(
            "Verification",
            extra: [
                "ENNHS",
                "ENCrypto",
                "ENPersistence",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        serviceTests(
            "Submission",
            extra: [
                "ENNHS",
                "ENKeyStore",
                "ENModels",
                "ENCrypto",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        serviceTests(
            "DataDonation",
            extra: [
                "ENNHS",
                "ENAttestation",
                "ENCrypto",
                "ENModels",
                "ENPersistence",
                "ENServiceKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        serviceTests(
            "Portal",
            extra: [
                "ENNHS",
                "ENCrypto",
                "ENPersistence",
                "ENServiceKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "CWAToolTests",
            dependencies: [
                "CWATool",
                "ENModels",
                "ENCrypto",
                "ENTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "Tests/CWAToolTests",
            resources: [.copy("Vectors")],
            swiftSettings: swiftSettings
        ),
        serviceTests(
            "Distribution",
            extra: [
                "ENNHS",
                "ENKeyStore",
                "ENModels",
                "ENCrypto",
                "ENPersistence",
                "ENServiceKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        serviceTests(
            "Federation",
            extra: [
                "ENKeyStore",
                "ENModels",
                "ENFederation",
                "ENServiceKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        .testTarget(
            name: "EFGSGatewayTests",
            dependencies: [
                "EFGSGateway",
                "ENTestSupport",
                "ENFederation",
                "ENModels",
                "ENPersistence",
                "ENCrypto",
                "ENServiceKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            path: "Tests/EFGSGatewayTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "TestResultService",
                "VerificationService",
                "SubmissionService",
                "PortalService",
                "DistributionService",
                "ENKeyStore",
                "ENNHS",
                "ENModels",
                "ENCrypto",
                "ENPersistence",
                "ENServiceKit",
                "ENTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "Tests/EndToEndTests",
            swiftSettings: swiftSettings
        ),
    ]
)

// MARK: - Target helpers

/// An executable service at `Services/<name>`, module `<name>Service`, with the shared kit and common settings.
func service(
    _ name: String,
    binary: String,
    extra: [Target.Dependency] = [],
    resources: [Resource] = [.copy("openapi.yaml")],
    exclude: [String] = []
) -> Target {
    .executableTarget(
        name: "\(name)Service",
        dependencies: [
            "ENModels",
            "ENCrypto",
            "ENPersistence",
            "ENServiceKit",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ] + extra,
        path: "Services/\(name)",
        exclude: ["README.md"] + exclude,
        resources: resources,
        swiftSettings: swiftSettings
    )
}

/// The test target of a service: the service itself plus the test support kit.
func serviceTests(_ name: String, extra: [Target.Dependency] = []) -> Target {
    .testTarget(
        name: "\(name)ServiceTests",
        dependencies: [
            .byName(name: "\(name)Service"),
            "ENTestSupport",
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "InMemoryLogging", package: "swift-log"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
        ] + extra,
        path: "Tests/\(name)ServiceTests",
        swiftSettings: swiftSettings
    )
}

/// The test target of a shared library.
func libraryTests(_ module: String, extra: [Target.Dependency] = [], resources: [Resource] = []) -> Target {
    .testTarget(
        name: "\(module)Tests",
        dependencies: [
            .byName(name: module),
            "ENTestSupport",
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "InMemoryLogging", package: "swift-log"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
        ] + extra,
        path: "Tests/\(module)Tests",
        resources: resources,
        swiftSettings: swiftSettings
    )
}
